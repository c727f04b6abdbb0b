"""Ordered, recorded schema migrations; each runs with its record row in one transaction."""

from __future__ import annotations

from collections.abc import Callable

import duckdb

Migration = Callable[[duckdb.DuckDBPyConnection], None]
MIGRATIONS: list[tuple[str, Migration]] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append((fn.__name__, fn))
    return fn


@migration
def m001_files_ingested_runs(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        """
        CREATE TABLE files (
            file_id     VARCHAR PRIMARY KEY,   -- fingerprint of the first line
            path        VARCHAR NOT NULL,
            agent       VARCHAR NOT NULL,
            session_id  VARCHAR NOT NULL,
            dev         UBIGINT NOT NULL,
            inode       UBIGINT NOT NULL,
            size        BIGINT NOT NULL,
            mtime_ns    BIGINT NOT NULL,
            "offset"    BIGINT NOT NULL,       -- end of the last consumed complete line
            tail_digest VARCHAR NOT NULL,      -- checksum of the bytes just before the offset
            state       VARCHAR NOT NULL,      -- active | gone
            first_seen  TIMESTAMPTZ NOT NULL DEFAULT now(),
            updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
        )
        """
    )
    con.execute(
        """
        CREATE TABLE ingested (
            session_id  VARCHAR NOT NULL,
            message_id  VARCHAR NOT NULL,
            agent       VARCHAR NOT NULL,
            file_id     VARCHAR NOT NULL,
            path        VARCHAR NOT NULL,
            byte_start  BIGINT NOT NULL,
            byte_end    BIGINT NOT NULL,
            role        VARCHAR NOT NULL,
            ts          VARCHAR,
            inter_session BOOLEAN NOT NULL,
            run_id      VARCHAR NOT NULL
        )
        """
    )
    con.execute(
        """
        CREATE TABLE runs (
            run_id      VARCHAR PRIMARY KEY,
            started_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
            finished_at TIMESTAMPTZ,
            status      VARCHAR NOT NULL,      -- running | ok | failed | interrupted
            sources     VARCHAR[] NOT NULL,
            counters    JSON,
            error       VARCHAR
        )
        """
    )


@migration
def m002_decisions_and_session_skip(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("ALTER TABLE ingested ADD COLUMN decision VARCHAR")
    con.execute("ALTER TABLE ingested ADD COLUMN reason VARCHAR")
    con.execute("ALTER TABLE files ADD COLUMN session_skip VARCHAR")


def pending(applied: set[str]) -> list[tuple[str, Migration]]:
    return [(name, fn) for name, fn in MIGRATIONS if name not in applied]
