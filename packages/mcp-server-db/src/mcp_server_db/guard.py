"""The parser layer of read-only: exactly one statement, of a read kind, calling nothing with side effects."""

from __future__ import annotations

import functools
import re

import sqlglot
from mcp_server_core import Refused
from sqlglot import exp
from sqlglot.errors import ParseError

__all__ = ["FORBIDDEN_FUNCTIONS", "check_one_statement", "check_read_only"]

HINT = "Send one SELECT (or WITH ... SELECT, or EXPLAIN SELECT); the server is read-only."

FORBIDDEN_FUNCTIONS = frozenset(
    {
        # time, locks and sessions
        "pg_sleep", "pg_sleep_for", "pg_sleep_until", "sleep", "benchmark", "get_lock", "release_lock",
        "release_all_locks", "is_free_lock", "is_used_lock", "pg_terminate_backend", "pg_cancel_backend",
        "pg_reload_conf", "pg_rotate_logfile", "set_config", "pg_notify", "pg_switch_wal", "pg_promote",
        # files and the outside world
        "pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_stat_file", "pg_file_write", "lo_import",
        "lo_export", "lo_unlink", "lo_create", "lo_from_bytea", "lo_put", "dblink", "dblink_exec",
        "dblink_connect", "dblink_send_query", "load_file", "load_extension", "readfile", "writefile",
        # sequences and other writes dressed as functions
        "nextval", "setval", "txid_current", "pg_current_xact_id",
    }
)  # fmt: skip
_FORBIDDEN_PREFIXES = ("pg_advisory", "pg_try_advisory", "lo_", "dblink")
_WRITE_NODES = (
    exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter, exp.Command,
    exp.Into, exp.Lock, exp.TruncateTable, exp.Set, exp.Copy, exp.LoadData, exp.Transaction,
    exp.Commit, exp.Rollback, exp.Pragma, exp.Use,
)  # fmt: skip
_EXPLAIN = re.compile(r"^\s*explain(\s+query\s+plan)?\s+", re.IGNORECASE)
_EXPLAIN_ANALYZE = re.compile(r"^\s*explain\s*(\(|analy[sz]e\b|extended\b|format\b)", re.IGNORECASE)

DIALECTS = {"sqlite": "sqlite", "postgresql": "postgres", "mysql": "mysql", "mariadb": "mysql"}


def _refuse(why: str) -> Refused:
    return Refused(f"Refused: {why}; only single read statements run here.", hint=HINT)


def _function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    return node.sql_name().lower()


_CACHED_SQL_CHARS = 8_000


def check_read_only(sql: str, dialect: str) -> tuple[str, bool]:
    """The statement to run and whether it was an EXPLAIN; a `Refused` for anything that is not one read.

    The verdict depends on the text and the dialect alone, so an accepted statement is remembered (a host
    pages one query, or re-runs it): parsing is a third of a short query's time. Refusals are not kept.
    """
    if len(sql) > _CACHED_SQL_CHARS:
        return _check_read_only(sql, dialect)
    return _accepted(sql, dialect)


@functools.lru_cache(maxsize=256)
def _accepted(sql: str, dialect: str) -> tuple[str, bool]:
    return _check_read_only(sql, dialect)


def _check_read_only(sql: str, dialect: str) -> tuple[str, bool]:
    if "/*!" in sql:
        raise _refuse("MySQL conditional comments (/*! ... */) are not allowed")
    if _EXPLAIN_ANALYZE.match(sql):
        raise _refuse("EXPLAIN with options or ANALYZE executes or reconfigures the statement; use explain_query")
    body = sql
    explain = False
    if match := _EXPLAIN.match(sql):
        body, explain = sql[match.end() :], True
    try:
        statements = [s for s in sqlglot.parse(body, read=DIALECTS.get(dialect, dialect)) if s is not None]
    except ParseError as exc:
        first = str(exc).splitlines()[0][:200]
        raise Refused(f"Refused: the SQL could not be checked as one read statement ({first}).", hint=HINT) from None
    if len(statements) != 1:
        raise _refuse(f"{len(statements)} statements were sent")
    tree = statements[0]
    if not isinstance(tree, exp.Query):
        raise _refuse(f"a {tree.key.upper()} statement is not a read")
    for node in tree.walk():
        if isinstance(node, _WRITE_NODES):
            raise _refuse(f"{node.key.upper()} inside the query writes or changes the session")
        if isinstance(node, exp.Select) and (node.args.get("into") or node.args.get("locks")):
            raise _refuse("SELECT ... INTO and locking clauses (FOR UPDATE/SHARE) are not reads")
        if isinstance(node, exp.Func):
            name = _function_name(node)
            if name in FORBIDDEN_FUNCTIONS or name.startswith(_FORBIDDEN_PREFIXES):
                raise _refuse(f"function {name}() has side effects or reaches outside the database")
    return body.strip().rstrip(";"), explain


def check_one_statement(sql: str, dialect: str) -> str:
    """Write mode: any one statement, but not transaction control (the server commits or rolls back the call)."""
    if "/*!" in sql:
        raise Refused("Refused: MySQL conditional comments (/*! ... */) are not allowed.", hint="Send plain SQL.")
    try:
        statements = [s for s in sqlglot.parse(sql, read=DIALECTS.get(dialect, dialect)) if s is not None]
    except ParseError as exc:
        first = str(exc).splitlines()[0][:200]
        raise Refused(f"Refused: the SQL could not be checked as one statement ({first}).") from None
    if len(statements) != 1:
        raise Refused(f"Refused: {len(statements)} statements were sent.", hint="Send one statement per call.")
    if isinstance(statements[0], exp.Transaction | exp.Commit | exp.Rollback):
        raise Refused(
            "Refused: transaction control is the server's: each call commits, or changes nothing.",
            hint="Send the statement alone.",
        )
    return sql.strip().rstrip(";")
