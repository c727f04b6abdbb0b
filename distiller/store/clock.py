"""The transcripts' own clock: the newest message time seen, per scope.

Decay and lifecycle run on it, not on the wall clock, so a history reprocessed today builds the store an hourly
run would have built by the end of it. A message dated in the future cannot push it past the wall clock (plus a
day of skew): one bad timestamp must not fade everything.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

import duckdb

from distiller.records import Message, message_time
from distiller.store.bulk import pack, rows

GLOBAL = "global"
SKEW = timedelta(days=1)


def join(scope: str, alias: str = "k") -> str:
    """A LEFT JOIN giving `{alias}.at`, the clock of the row's scope (NULL while none is known)."""
    return (f"LEFT JOIN (SELECT substr(name, 7) AS scope, value::TIMESTAMPTZ AS at FROM store_meta "
            f"WHERE name LIKE 'clock:%') AS {alias} ON {alias}.scope = {scope}")


def newest_by_scope(messages: Iterable[Message], wall: datetime | None = None) -> dict[str, datetime]:
    """Each agent's scope and the global one, at the newest credible message time among `messages`."""
    return newest_of(((message.agent, message_time(message.ts)) for message in messages), wall)


def newest_of(times: Iterable[tuple[str, datetime | None]], wall: datetime | None = None) -> dict[str, datetime]:
    """The same from (agent, time) pairs: an import's evidence, when its export carries no clock."""
    ceiling = (wall or datetime.now(UTC)) + SKEW
    newest: dict[str, datetime] = {}
    for agent, at in times:
        if at is None:
            continue
        at = min(at, ceiling)
        for scope in (f"agent:{agent}", GLOBAL):
            if scope not in newest or at > newest[scope]:
                newest[scope] = at
    return newest


def advance(con: duckdb.DuckDBPyConnection, newest: dict[str, datetime]) -> None:
    """Move each scope's clock forward to `newest`, never back (replays and late files leave it)."""
    if not newest:
        return
    con.execute(
        f"""
        INSERT INTO store_meta SELECT 'clock:' || scope, newest FROM {rows({"scope": "VARCHAR", "newest": "VARCHAR"})}
        ON CONFLICT (name) DO UPDATE SET value = CASE
            WHEN excluded.value::TIMESTAMPTZ > store_meta.value::TIMESTAMPTZ THEN excluded.value
            ELSE store_meta.value END
        """,
        {"rows": pack(scope=list(newest), newest=[t.astimezone(UTC).isoformat() for t in newest.values()])},
    )


def read(con: duckdb.DuckDBPyConnection) -> dict[str, datetime]:
    return dict(con.execute(
        "SELECT substr(name, 7), value::TIMESTAMPTZ FROM store_meta WHERE name LIKE 'clock:%'").fetchall())
