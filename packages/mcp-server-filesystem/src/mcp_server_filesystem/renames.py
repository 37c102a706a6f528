"""Linux's renameat2: a rename that never replaces, and one that swaps two names in a single step.

A check followed by a rename is two steps, and another program's rename can land between them: the
stale-edit guard then overwrote the newer version it was meant to protect, and a move "without overwrite"
replaced a file created meanwhile. With `RENAME_EXCHANGE` a replace is undoable (the old file stays
reachable under the temporary name until it is checked), and `RENAME_NOREPLACE` makes the kernel refuse an
existing name. Each function returns False where the kernel, the C library or the filesystem cannot do it,
so the caller falls back to its narrower-window path.
"""

from __future__ import annotations

import ctypes
import errno
import os

__all__ = ["exchange", "rename_noreplace"]

_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_UNSUPPORTED = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP})


def _load() -> ctypes._NamedFuncPointer | None:
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # not Linux, or a C library older than glibc 2.28
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


_renameat2 = _load()


def _rename(src_dir: int, src: str, dst_dir: int, dst: str, flags: int) -> bool:
    if _renameat2 is None:
        return False
    if _renameat2(src_dir, os.fsencode(src), dst_dir, os.fsencode(dst), flags) == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        # EINVAL is also "a directory into itself": the fallback's plain rename then answers that itself.
        return False
    raise OSError(code, os.strerror(code), src, None, dst)


def exchange(dir_fd: int, first: str, second: str) -> bool:
    """Swap the two names in `dir_fd` atomically; False if that cannot be done here."""
    return _rename(dir_fd, first, dir_fd, second, _RENAME_EXCHANGE)


def rename_noreplace(src_dir: int, src: str, dst_dir: int, dst: str) -> bool:
    """Rename, failing with FileExistsError if `dst` exists; False if that cannot be done here."""
    return _rename(src_dir, src, dst_dir, dst, _RENAME_NOREPLACE)
