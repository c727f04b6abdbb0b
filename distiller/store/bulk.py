"""Column batches handed to DuckDB as one JSON document: about 2.5× cheaper per value than list parameters.

    con.execute(f"INSERT INTO t SELECT a, b FROM {rows({'a': 'VARCHAR', 'b': 'BIGINT'})}", {"rows": pack(a=…, b=…)})
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson


def pack(**columns: Sequence[object]) -> str:
    return orjson.dumps(columns).decode()


def rows(types: dict[str, str], param: str = "rows") -> str:
    """A subquery yielding one row per index of the packed, equally long columns."""
    shape = orjson.dumps({name: [kind] for name, kind in types.items()}).decode()
    selected = ", ".join(f"unnest(j.{name}) AS {name}" for name in types)
    # Parsing a column of the subquery, not the parameter itself, keeps the optimizer from folding the whole batch
    # into one constant and rewriting it pass after pass (4× slower for 15k values).
    return f"(SELECT {selected} FROM (SELECT from_json(doc, '{shape}') AS j FROM (SELECT ${param} AS doc)))"
