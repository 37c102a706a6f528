"""Prompts: the three jobs people bring to a database inspector, each naming the tools that do it well."""

from __future__ import annotations

from mcp_server_core import ReferenceServer

__all__ = ["add_prompts"]

EXPLORE_TABLE = (
    "Call describe_tables with tables=[{table!r}] and sample_rows=5. Then explain in plain words what one row of "
    "it represents, what each column means (say where you are guessing), which tables it references and which "
    "reference it, and suggest three questions this table can answer, each with the SELECT that answers it."
)
WRITE_QUERY = (
    "Question: {question}\n\nFind the tables involved with find_objects (detail='summary'), read their columns and "
    "keys with describe_tables, and write one SELECT that answers the question, joining on the foreign keys shown. "
    "Run it with run_query (bind values through params, never inline them), check the result is plausible, and "
    "answer with the result and the SQL."
)
REVIEW_QUERY_PLAN = (
    "Run run_query with sql='EXPLAIN ' followed by this query:\n\n{sql}\n\nRead the plan: name each full scan of a "
    "large table, each sort or hash that could spill, and each join order that looks wrong. Check the indexes with "
    "describe_tables, then propose specific indexes or rewrites, and say what each should change in the plan."
)


def add_prompts(server: ReferenceServer) -> None:
    @server.prompt(title="Explore a table", description="What a table holds, how it connects, what to ask of it")
    def explore_table(table: str) -> str:
        return EXPLORE_TABLE.format(table=table)

    @server.prompt(title="Write a query", description="Turn a question into one SELECT, checked against the schema")
    def write_query(question: str) -> str:
        return WRITE_QUERY.format(question=question)

    @server.prompt(title="Review a query plan", description="Read a query's plan and say how to make it cheaper")
    def review_query_plan(sql: str) -> str:
        return REVIEW_QUERY_PLAN.format(sql=sql)
