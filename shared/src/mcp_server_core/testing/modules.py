"""A module loaded from its file: a server's fake web API lives in its tests folder, which is not a package, and
the cross-server tests and the benchmarks run against the same fake."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["module_at"]


def module_at(name: str, path: str | Path) -> ModuleType:
    """Load the file at `path` as the module `name`, registered in `sys.modules` before it runs (dataclasses look
    their module up while it loads)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
