"""The parser layer of read-only: exactly one statement, of a read kind, calling only functions known to be pure.

Three steps, each an allowlist:
1. **What the text may contain.** The verdict is about sqlglot's reading of the text, so the text must be read
   the same way by sqlglot and by the engine. Where they can disagree (comments, which nest in PostgreSQL but not
   in MySQL and hide MySQL's executable `/*! */` and `/*M! */`; backslash escapes, which end a string early for
   one and not the other; PostgreSQL's `U&"..."`, `E'...'` and `$$` quoting), the text is refused: a value that
   needs a backslash goes in `params`, which the driver binds and no parser reads.
2. **What the statement may be.** One SELECT (or WITH ... SELECT, VALUES, or EXPLAIN SELECT), nothing in it that
   writes, locks, assigns a variable or changes the session.
3. **What it may call.** Every function call, wherever it stands (select list, FROM, LATERAL, WHERE, ORDER BY,
   a CTE, a subquery, a window), must be on the dialect's allowlist (functions.py), judged on the name as written
   and as the engine will resolve it, never on what sqlglot took it for (it types `median(x)` as a pure median
   where PostgreSQL has none and runs whatever function of that name the database holds): unquoted names fold
   to lowercase, quoted ones keep their case (PostgreSQL's `"UPPER"` is not `upper`), a schema may qualify a call
   only as `pg_catalog.`, and a cast may only name a built-in type (a user-defined type's input function is code
   too). The names called are handed on: on PostgreSQL a listed name can still resolve to a function of that
   name in another schema (an overload, `public.upper(integer)`), which only the database knows of
   (`Database.check_statement`). The engine layer (database.py) runs what passes in a read-only transaction as a
   role checked at connect; neither layer alone is the promise.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

import sqlglot
from mcp_server_core import Refused
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokenizer_core import Token, TokenType

from mcp_server_db.functions import ALLOWED_NAMES, NEVER, SAFE_TYPED

__all__ = ["DIALECTS", "Verdict", "check_one_statement", "check_read_only", "written_tables"]

HINT = "Send one SELECT (or WITH ... SELECT, or EXPLAIN SELECT); the server is read-only."

_WRITE_NODES = (
    exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter, exp.Command,
    exp.Into, exp.Lock, exp.TruncateTable, exp.Set, exp.Copy, exp.LoadData, exp.Transaction,
    exp.Commit, exp.Rollback, exp.Pragma, exp.Use,
)  # fmt: skip
_EXPLAIN = re.compile(r"^\s*explain(\s+query\s+plan)?\s+", re.IGNORECASE)
_VALUES = re.compile(r"^\s*values\s*\(", re.IGNORECASE)
_EXPLAIN_ANALYZE = re.compile(r"^\s*explain\s*(\(|analy[sz]e\b|extended\b|format\b)", re.IGNORECASE)

DIALECTS = {"sqlite": "sqlite", "postgresql": "postgres", "mysql": "mysql", "mariadb": "mysql"}
_CACHED_SQL_CHARS = 8_000
_GRAMMAR = frozenset(["cast", "extract", "position", "substring", "trim", "values"])
"""Words sqlglot reads with a parser of their own that every engine reads as grammar, never as a function's name."""
_NAME = re.compile(r'"[^"]+"|`[^`]+`|[A-Za-z_][A-Za-z0-9_$]*')
_PG_OPERATOR = re.compile(r"[-+*/<>=~!@#%^&|`?]+")


class Verdict(NamedTuple):
    statement: str
    """What to run, through SQLAlchemy's text(): the text as sent (not sqlglot's rendering of it), without a
    leading EXPLAIN, its colons inside quotes escaped (`\\:`) so that text() leaves them as they are."""
    explain: bool
    calls: frozenset[str]
    """Every function name the statement calls, as the engine resolves it (for `Database.check_statement`)."""
    types: frozenset[str] = frozenset()
    """Every name a type the statement makes a value of (a cast, a typed literal, a column definition) may have
    been written as, lowercase: sqlglot keeps the type, not its spelling (for `Database.check_statement`)."""
    operators: frozenset[str] = frozenset()
    """PostgreSQL: every operator name the text may hold, read as PostgreSQL reads operators (a run of operator
    characters), not as sqlglot does, which knows only the built-in ones (for `Database.check_statement`)."""
    relations: frozenset[str] = frozenset()
    """Every relation the statement names (PostgreSQL: as written; MariaDB: schema.name), since a view runs its
    definition and, on PostgreSQL, a table its row-level policies (for `Database.check_statement`)."""


def _refuse(why: str, hint: str = HINT) -> Refused:
    return Refused(f"Refused: {why}; only single read statements of known functions run here.", hint=hint)


def check_read_only(sql: str, dialect: str, allowed: Iterable[str] = ()) -> Verdict:
    """The statement to run, whether it was an EXPLAIN and what it calls; a `Refused` for anything that is not one
    safe read.

    `allowed` are functions the operator allowed by name (`--allow-function`). The verdict depends on the text,
    the dialect and that set alone, so an accepted statement is remembered (a host pages one query, or re-runs
    it): parsing is a third of a short query's time. Refusals are not kept.
    """
    extra = frozenset(name.lower() for name in allowed)
    if len(sql) > _CACHED_SQL_CHARS:
        return _check_read_only(sql, dialect, extra)
    return _accepted(sql, dialect, extra)


@functools.lru_cache(maxsize=256)
def _accepted(sql: str, dialect: str, extra: frozenset[str]) -> Verdict:
    return _check_read_only(sql, dialect, extra)


def _check_read_only(sql: str, dialect: str, extra: frozenset[str]) -> Verdict:
    _check_text(sql, dialect)
    if _EXPLAIN_ANALYZE.match(sql):
        raise _refuse("EXPLAIN with options or ANALYZE executes or reconfigures the statement; use explain_query")
    text, explain = sql, False
    if match := _EXPLAIN.match(sql):
        text, explain = sql[match.end() :], True
    # A bare VALUES list is a read, which sqlglot takes for a MySQL VALUES() call: it is judged as the subquery it
    # is (every token of it, in the same order, inside SELECT * FROM (...)) and runs as written.
    body = f"SELECT * FROM ({text}\n) AS v" if _VALUES.match(text) else text  # noqa: S608 - judged, not run
    read = DIALECTS.get(dialect, dialect)
    try:
        tokens = sqlglot.tokenize(body, read=read)
        statements = [s for s in sqlglot.parse(body, read=read) if s is not None]
    except (ParseError, TokenError) as exc:
        first = str(exc).splitlines()[0][:200]
        raise Refused(f"Refused: the SQL could not be checked as one read statement ({first}).", hint=HINT) from None
    if len(statements) != 1:
        raise _refuse(f"{len(statements)} statements were sent")
    tree = statements[0]
    if not isinstance(tree, exp.Query):
        raise _refuse(f"a {tree.key.upper()} statement is not a read")
    calls = set(_check_named_calls(tokens, dialect, extra))
    types: set[str] = set()
    relations: set[str] = set()
    for node in tree.walk():
        if isinstance(node, _WRITE_NODES):
            raise _refuse(f"{node.key.upper()} inside the query writes or changes the session")
        if isinstance(node, exp.Select) and (node.args.get("into") or node.args.get("locks")):
            raise _refuse("SELECT ... INTO and locking clauses (FOR UPDATE/SHARE) are not reads")
        if isinstance(node, exp.PropertyEQ) or (isinstance(node, exp.Parameter) and dialect != "postgresql"):
            raise _refuse("assigning or reading session variables carries state from one call to the next")
        if isinstance(node, exp.DataType) and node.this == exp.DataType.Type.USERDEFINED:
            raise _refuse(
                f"a cast to the user-defined type {node.sql(dialect=read)} runs that type's input function",
                hint="Cast to a built-in type.",
            )
        if isinstance(node, exp.DataType):
            types |= _spellings(read, node)
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier) and (name := _relation(node, dialect)):
            relations.add(name)
        if isinstance(node, exp.Operator) and "." in str(node.args.get("operator")):
            operator = str(node.args.get("operator"))
            if operator.split(".")[0].strip().strip('"') != "pg_catalog":
                raise _refuse(
                    f"an operator qualified by a schema (OPERATOR({operator})) can reach a user-defined function",
                    hint="Use the built-in operators unqualified (or as OPERATOR(pg_catalog.op)).",
                )
        if isinstance(node, exp.Func) and (name := _check_call(node, body, dialect, extra)):
            calls.add(name)
    operators = _pg_operators(body) if dialect == "postgresql" else frozenset()
    statement = _colons_kept(text.strip().rstrip(";"), backticks=dialect != "postgresql")
    return Verdict(statement, explain, frozenset(calls), frozenset(types), operators, frozenset(relations))


def _check_text(sql: str, dialect: str) -> None:
    """Refuse what sqlglot and the engine could read differently (see the module docstring)."""
    if "\x00" in sql:
        raise _refuse("the SQL holds a NUL character")
    if "\\" in sql:
        raise _refuse(
            "backslashes are read differently by the engine and by this server's parser",
            hint="Pass a value that holds a backslash in params (:name placeholders).",
        )
    code = _outside_quotes(sql, backticks=dialect != "postgresql")
    if "--" in code or "/*" in code or (dialect in ("mysql", "mariadb") and "#" in code):
        raise _refuse(
            "comments are read differently by the engine and by this server's parser (and hide MySQL's "
            "executable /*! */ comments)",
            hint="Send the statement without comments.",
        )
    if dialect == "postgresql":
        if "$" in code:
            raise _refuse("dollar quoting and $n parameters are not read here", hint="Use '...' and :name params.")
        if re.search(r"(?<![\w$])(?:[uU]&['\"]|[eE]')", code):
            raise _refuse("U&'...', U&\"...\" and E'...' escapes are not read here", hint="Use plain quotes.")


def _colons_kept(sql: str, *, backticks: bool) -> str:
    """The text with each colon inside quotes escaped for SQLAlchemy's text(), which reads `:name` as a placeholder
    wherever it stands: `SELECT ':p'` with params {"p": ...} had PyMySQL write the value, quoted, into the literal,
    ending it (`SELECT '', <the value as SQL>, ''`); the engine then ran SQL the guard never judged. text() turns
    the escape back into the colon, so the engine runs the text that was judged. (The text holds no backslash of
    its own: _check_text refuses them.)"""
    mask = _outside_quotes(sql, backticks=backticks)
    return "".join("\\:" if char == ":" and mask[index] == " " else char for index, char in enumerate(sql))


def _outside_quotes(sql: str, *, backticks: bool) -> str:
    """The text with every quoted part ('...', "...", and `...` where the dialect has them) blanked out."""
    out: list[str] = []
    quote: str | None = None
    index = 0
    while index < len(sql):
        char = sql[index]
        if quote is None:
            if char in "'\"" or (backticks and char == "`"):
                quote = char
                out.append(char)  # the opening quote stays, so a prefix like U& or E is seen right before it
            else:
                out.append(char)
        elif char == quote:
            if index + 1 < len(sql) and sql[index + 1] == quote:  # '' inside '...' is one quote
                index += 1
            else:
                quote = None
            out.append(" ")
        else:
            out.append(" ")
        index += 1
    if quote is not None:
        raise _refuse("a quote is not closed")
    return "".join(out)


def _check_named_calls(tokens: list[Token], dialect: str, extra: frozenset[str]) -> Iterator[str]:
    """Calls whose name sqlglot's tree does not keep as written; yields the names, as the engine resolves them.

    A quoted name: the tree forgets the quotes, the engine does not. A name sqlglot reads with a parser of its own
    (`INITCAP`, `STRING_AGG`, `CEIL`): the tree holds no position for it, and the name is the engine's to resolve
    (MariaDB has no `initcap`, so a stored function of that name is what runs).
    """
    parser = Dialect.get_or_raise(DIALECTS.get(dialect, dialect)).parser_class
    parsers, types = parser.FUNCTION_PARSERS, parser.TYPE_TOKENS
    allowed = ALLOWED_NAMES.get(dialect, frozenset()) | extra
    for token, following in itertools.pairwise(tokens):
        if following.token_type != TokenType.L_PAREN:
            continue
        name = token.text
        if token.token_type == TokenType.IDENTIFIER:
            if dialect == "postgresql" and name in allowed and name not in NEVER:
                yield name  # "upper" is upper; "UPPER" would be some other function
                continue
            raise _refuse(
                f"the quoted function name {name!r} may name a function other than the built-in one",
                hint="Call built-in functions by their plain lowercase names.",
            )
        # A type's name (CHAR(10) in a cast) is a keyword the engine reads as a type, never a function's name.
        if name.upper() in parsers and name.lower() not in _GRAMMAR and token.token_type not in types:
            if name.lower() not in allowed:
                raise _not_allowed(name.lower())
            yield name.lower()


def _check_call(node: exp.Func, body: str, dialect: str, extra: frozenset[str]) -> str | None:
    """Refuse a call that is not on the lists; the name it calls, if it is written as one."""
    parent = node.parent
    if isinstance(parent, exp.Dot) and parent.expression is node:
        qualifier = parent.this
        if not (
            dialect == "postgresql" and isinstance(qualifier, exp.Identifier) and _folded(qualifier) == "pg_catalog"
        ):
            raise _refuse(
                f"a call qualified by a schema or database ({parent.sql()[:80]}) can reach a user-defined function",
                hint="Call built-in functions unqualified (or as pg_catalog.name on PostgreSQL).",
            )
    name = _written_name(node, body)
    if name is None and isinstance(node, exp.Anonymous):
        name = _folded(node.this) if isinstance(node.this, exp.Identifier) else str(node.this).lower()
    if name is None:  # syntax or an operator (CAST, ::, ->>, CASE), or a name _check_named_calls judged
        if type(node).__name__ in SAFE_TYPED:
            return None
        name = node.sql_name().lower()
        if name in extra or type(node).__name__.lower() in extra:
            return None
        raise _not_allowed(name)
    if name in NEVER:
        raise _refuse(
            f"function {name}() runs SQL given as text or reaches outside the database; it is never allowed",
            hint="Query the tables directly.",
        )
    if name in ALLOWED_NAMES.get(dialect, frozenset()) or name in extra:
        return name
    raise _not_allowed(name)


def _relation(table: exp.Table, dialect: str) -> str | None:
    """A relation's name for `Database.check_statement`: PostgreSQL's to_regclass reads it as written, MariaDB's
    and SQLite's catalogs hold the names themselves (SQLite's views call built-ins only: its names serve the
    tools' error messages); None for DUAL."""
    if dialect != "postgresql" and not table.db and table.name.lower() == "dual":
        return None
    if dialect == "postgresql":
        return ".".join(part.sql(dialect="postgres") for part in table.parts)
    return ".".join(part.name for part in table.parts)


def _pg_operators(body: str) -> frozenset[str]:
    """Every operator name PostgreSQL could read in the text: each run of operator characters outside quotes,
    and each part of a run, since its lexer splits some runs (`+-` ends in a sign: two operators)."""
    found: set[str] = set()
    for run in _PG_OPERATOR.findall(_outside_quotes(body, backticks=False)):
        found |= {run[i:j] for i in range(len(run)) for j in range(i + 1, len(run) + 1)}
    return frozenset(found)


def _spellings(read: str, node: exp.DataType) -> set[str]:
    """The names a type may have been written as: `'x'::datetime` and `'x'::"Text"` reach sqlglot as its
    DATETIME and TEXT, which PostgreSQL resolves to whatever type of that name the database holds."""
    kind = node.this  # a DataType.Type, or the name itself for object identifiers (REGCLASS)
    name = kind.name if isinstance(kind, exp.DataType.Type) else str(kind).upper()
    return _type_words(read).get(name, set()) | {name.lower()}


@functools.cache
def _type_words(read: str) -> dict[str, set[str]]:
    """Per sqlglot type, the keywords the dialect's tokenizer reads as it (DATETIME: datetime; INT: int, int4, ...)."""
    dialect = Dialect.get_or_raise(read)
    types = dialect.parser_class.TYPE_TOKENS
    words: dict[str, set[str]] = {}
    for word, token_type in dialect.tokenizer_class.KEYWORDS.items():
        if token_type in types:
            words.setdefault(token_type.name, set()).add(word.lower())
    return words


def _written_name(node: exp.Func, body: str) -> str | None:
    """The call's name as the text writes it, folded as the engine folds it; None where the tree keeps no
    position (syntax, operators). A position that does not fall on a name is refused, not guessed around."""
    start, end = node.meta.get("start"), node.meta.get("end")
    if start is None or end is None:
        return None
    written = body[start : end + 1]
    if not _NAME.fullmatch(written):
        raise _refuse(f"the call at character {start} could not be read as a function name")
    return written[1:-1] if written[0] in '"`' else written.lower()


def _not_allowed(name: str) -> Refused:
    return _refuse(
        f"function {name}() is not on this server's list of functions known to have no side effects",
        hint=(
            f"Rewrite without {name}(); if it is safe, the server's operator can allow it with "
            f"--allow-function {name} (their choice, not the query's)."
        ),
    )


def _folded(identifier: exp.Expression) -> str:
    """A name as the engine resolves it: unquoted names fold to lowercase, quoted ones keep their case."""
    name = identifier.name
    return name if isinstance(identifier, exp.Identifier) and identifier.quoted else name.lower()


def check_one_statement(sql: str, dialect: str) -> str:
    """Write mode: any one statement, but not transaction control (the server commits or rolls back the call)."""
    if "/*!" in sql or "/*M!" in sql.upper():
        raise Refused("Refused: MySQL executable comments (/*! ... */) are not allowed.", hint="Send plain SQL.")
    try:
        statements = [s for s in sqlglot.parse(sql, read=DIALECTS.get(dialect, dialect)) if s is not None]
    except (ParseError, TokenError) as exc:
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


def written_tables(sql: str, dialect: str) -> list[str]:
    """The tables a write statement names (for its audit line); empty when it names none sqlglot can see."""
    try:
        tree = sqlglot.parse_one(sql, read=DIALECTS.get(dialect, dialect))
    except (ParseError, TokenError):
        return []
    names = [table.sql(dialect=DIALECTS.get(dialect, dialect)) for table in tree.find_all(exp.Table) if table.name]
    return list(dict.fromkeys(names))[:20]
