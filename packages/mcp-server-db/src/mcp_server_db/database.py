"""The engine layer: connections that cannot write, statement timeouts, and schema reads."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.resources import files
from pathlib import Path
from typing import Any

from mcp_server_core import InvalidArgument, Unavailable, register_secret
from sqlalchemy import Connection, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.pool import NullPool

__all__ = ["Database", "sample_path"]

_SQLITE_DENY = {sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH}
_SQLITE_WRITE_PRAGMAS = {"query_only", "writable_schema", "journal_mode", "schema_version", "user_version"}


def sample_path() -> Path:
    return Path(str(files("mcp_server_db") / "sample.db"))


def _authorizer(action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None) -> int:
    if action in _SQLITE_DENY:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in _SQLITE_WRITE_PRAGMAS and arg2 is not None:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() == "load_extension":
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


class Database:
    """One database, opened so that the engine itself refuses writes."""

    def __init__(self, url: str | None, *, timeout_s: float = 10.0) -> None:
        self.timeout_s = timeout_s
        self._deadline = 0.0
        if url is None:
            url = f"sqlite:///{sample_path()}"
        parsed = make_url(url)
        register_secret(parsed.password)
        self.display_url = parsed.render_as_string(hide_password=True)
        self.dialect = parsed.get_backend_name()
        if self.dialect == "sqlite":
            path = parsed.database or ""
            if not path or path == ":memory:" or not Path(path).exists():
                raise ValueError(f"SQLite database file not found: {path or '(none)'}")
            self.engine = create_engine("sqlite://", creator=lambda: self._sqlite_connect(path))
        elif self.dialect in ("postgresql", "mysql", "mariadb"):
            if self.dialect == "postgresql" and parsed.drivername == "postgresql":
                parsed = parsed.set(drivername="postgresql+psycopg")
            if self.dialect in ("mysql", "mariadb") and "+" not in parsed.drivername:
                parsed = parsed.set(drivername=f"{self.dialect}+pymysql")
            # NullPool for this cut: no connection outlives a call (and each one gets the session settings).
            self.engine = create_engine(parsed, poolclass=NullPool)
            event.listen(self.engine, "connect", self._server_session)
        else:
            raise ValueError(f"unsupported database {self.dialect!r}: use sqlite, postgresql, mysql or mariadb")

    def _sqlite_connect(self, path: str) -> sqlite3.Connection:
        raw = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True, check_same_thread=False)
        raw.execute("PRAGMA query_only=ON")
        raw.set_authorizer(_authorizer)
        raw.set_progress_handler(lambda: 1 if self._deadline and time.monotonic() > self._deadline else 0, 10_000)
        return raw

    def _server_session(self, dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        if self.dialect == "postgresql":
            cursor.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
            cursor.execute(f"SET statement_timeout = {int(self.timeout_s * 1000)}")
        else:
            cursor.execute("SET SESSION TRANSACTION READ ONLY")
            cursor.execute(f"SET SESSION max_statement_time = {self.timeout_s:.3f}")
        cursor.close()
        dbapi_connection.commit()

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        """A connection whose transaction is always rolled back, with the statement deadline armed."""
        try:
            with self.engine.connect() as connection:
                self._deadline = time.monotonic() + self.timeout_s
                try:
                    yield connection
                finally:
                    self._deadline = 0.0
                    connection.rollback()
        except DBAPIError as exc:
            raise self._failure(exc) from None
        except SQLAlchemyError as exc:
            raise Unavailable(f"The database call failed: {type(exc).__name__}.") from None

    def _failure(self, exc: DBAPIError) -> Exception:
        message = str(exc.orig).strip().splitlines()[0][:300] if exc.orig is not None else type(exc).__name__
        lowered = message.lower()
        if "interrupt" in lowered or "timeout" in lowered or "max_statement_time" in lowered or "cancel" in lowered:
            return Unavailable(
                f"The statement ran past the {self.timeout_s:g} s timeout and was stopped.",
                hint="Add a WHERE or LIMIT, or ask for less.",
            )
        if exc.connection_invalidated or isinstance(exc.orig, OSError):
            return Unavailable(f"The database at {self.display_url} is unreachable: {message}")
        return InvalidArgument(f"The database refused the statement: {message}")

    def execute(self, connection: Connection, sql: str, params: dict[str, Any] | None = None) -> Any:
        return connection.execute(text(sql), params or {})

    def inspector(self, connection: Connection) -> Any:
        return inspect(connection)
