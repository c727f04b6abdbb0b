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



@migration
def m003_beliefs_evidence_tombstones(con: duckdb.DuckDBPyConnection) -> None:
    """One unique key per table (DuckDB's upsert rule); everything else is found by scans, not indexes."""
    con.execute(
        """
        CREATE TABLE beliefs (
            belief_id      VARCHAR PRIMARY KEY,  -- "b1:" + hash(scope, normalized first statement); never changes
            statement      VARCHAR NOT NULL,     -- the most informative wording seen
            words          VARCHAR NOT NULL,     -- content words (stemmed, no stopwords/negations), space-joined
            sig            VARCHAR NOT NULL,     -- numbers | dates | negation: differing means not a duplicate
            category       VARCHAR NOT NULL,
            scope          VARCHAR NOT NULL,     -- global | agent:<id>
            subject        VARCHAR NOT NULL,
            attribute      VARCHAR NOT NULL,     -- (scope, subject, attribute) is the slot a newer belief supersedes
            confidence     DOUBLE NOT NULL,      -- combined over the evidence, recomputed from it
            evidence_type  VARCHAR NOT NULL,     -- explicit if any evidence is
            importance     INTEGER NOT NULL,
            decay_sensitivity VARCHAR NOT NULL,
            status         VARCHAR NOT NULL,     -- provisional | active | archived | flagged_for_review
            valid_from     VARCHAR,
            valid_to       VARCHAR,
            superseded_by  VARCHAR,
            supersedes     VARCHAR,
            conflicts_with VARCHAR,              -- the active belief a flagged one contradicts
            evidence_count INTEGER NOT NULL,
            sessions       INTEGER NOT NULL,
            first_seen     TIMESTAMPTZ NOT NULL, -- world time: the earliest and latest evidence
            last_seen      TIMESTAMPTZ NOT NULL,
            created_at     TIMESTAMPTZ NOT NULL, -- system time
            updated_at     TIMESTAMPTZ NOT NULL,
            run_id         VARCHAR NOT NULL,
            extractor      VARCHAR NOT NULL,
            model          VARCHAR,
            prompt_version VARCHAR NOT NULL
        )
        """
    )
    con.execute(
        """
        CREATE TABLE belief_words (
            word_key  BIGINT NOT NULL,           -- a content word of the belief, or a pair of them, within its
            belief_id VARCHAR NOT NULL           -- (scope, category, subject) group; old wordings' keys stay
        )
        """
    )
    con.execute(
        """
        CREATE TABLE belief_keys (
            key       VARCHAR PRIMARY KEY,       -- every wording merged into a belief, so a replay matches exactly
            belief_id VARCHAR NOT NULL
        )
        """
    )
    con.execute(
        """
        CREATE TABLE evidence (
            belief_id   VARCHAR NOT NULL,
            session_id  VARCHAR NOT NULL,
            message_id  VARCHAR NOT NULL,
            agent       VARCHAR NOT NULL,
            file        VARCHAR NOT NULL,
            byte_start  BIGINT NOT NULL,
            byte_end    BIGINT NOT NULL,
            ts          TIMESTAMPTZ NOT NULL,
            quote       VARCHAR NOT NULL,
            statement   VARCHAR NOT NULL,        -- the wording it came with: forgetting a source forgets its wording
            confidence  DOUBLE NOT NULL,         -- of the candidate it came with, so merges recombine exactly
            explicit    BOOLEAN NOT NULL,
            run_id      VARCHAR NOT NULL,
            added_at    TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (belief_id, session_id, message_id)
        )
        """
    )
    con.execute(
        """
        CREATE TABLE tombstones (
            key        VARCHAR PRIMARY KEY,      -- a hash only: forgetting keeps no text
            kind       VARCHAR NOT NULL,         -- statement | slot_message | session | file
            created_at TIMESTAMPTZ NOT NULL,
            reason     VARCHAR NOT NULL          -- forget-id | forget-match | forget-source
        )
        """
    )
    con.execute(
        """
        CREATE TABLE belief_history (
            belief_id  VARCHAR NOT NULL,
            "at"       TIMESTAMPTZ NOT NULL,
            event      VARCHAR NOT NULL,         -- superseded | supersedes | superseded_late | revived | flagged | faded
            run_id     VARCHAR NOT NULL,
            other_id   VARCHAR
        )
        """
    )
    con.execute(
        """
        CREATE MACRO token_jaccard(a, b) AS
            len(list_intersect(a, b))::DOUBLE / greatest(len(a) + len(b) - len(list_intersect(a, b)), 1)
        """
    )


@migration
def m010_batches_and_llm_calls(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        """
        CREATE TABLE batches (
            batch_id      VARCHAR PRIMARY KEY,
            run_id        VARCHAR NOT NULL,
            committed_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
            status        VARCHAR NOT NULL,      -- committed | quarantined | retried | discarded
            extractor     VARCHAR NOT NULL,
            model         VARCHAR,
            requests      INTEGER NOT NULL,
            items         INTEGER NOT NULL,
            candidates    INTEGER NOT NULL,
            rejected      JSON,
            input_tokens  BIGINT NOT NULL,
            output_tokens BIGINT NOT NULL,
            cost_usd      DOUBLE NOT NULL,
            error         VARCHAR,
            quarantine    JSON                   -- the failed requests and their items, until retried or discarded
        )
        """
    )
    con.execute(
        """
        CREATE TABLE llm_calls (
            batch_id           VARCHAR NOT NULL,
            run_id             VARCHAR NOT NULL,
            model              VARCHAR NOT NULL,
            input_tokens       BIGINT NOT NULL,
            output_tokens      BIGINT NOT NULL,
            cache_read_tokens  BIGINT NOT NULL,
            cache_write_tokens BIGINT NOT NULL,
            latency_ms         BIGINT NOT NULL,
            cost_usd           DOUBLE NOT NULL,
            called_at          TIMESTAMPTZ NOT NULL
        )
        """
    )


@migration
def m011_word_index_keys_in_sql(con: duckdb.DuckDBPyConnection) -> None:
    """The near-duplicate index's keys are now computed in SQL; m012 fills the table with their current definition."""
    con.execute("DROP TABLE belief_words")
    con.execute(
        """
        CREATE TABLE belief_words (
            key       UBIGINT NOT NULL,          -- a near-duplicate key of one wording of the belief;
            belief_id VARCHAR NOT NULL           -- see store/word_index.py
        )
        """
    )


@migration
def m012_word_index_prefix_triples_by_duckdb_hash(con: duckdb.DuckDBPyConnection) -> None:
    """Near-duplicate keys were prefix triples keyed by DuckDB's hash, recorded in store_meta so that another
    version's hash triggered a rebuild of the index here.

    The index is gone (m020 drops its table and fingerprint), so the rebuild no longer runs: the index it filled
    would be dropped unread, and a database migrated either way ends in the same state."""
    con.execute("CREATE TABLE store_meta (name VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)")


@migration
def m013_reprocess_jobs(con: duckdb.DuckDBPyConnection) -> None:
    """`distill reprocess` keeps its own progress, apart from the live cursors, so a killed one resumes."""
    con.execute(
        """
        CREATE TABLE reprocess_jobs (
            job_id         VARCHAR PRIMARY KEY,  -- a hash of what is reprocessed and by which extractor/model/prompt
            started_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
            finished_at    TIMESTAMPTZ,
            status         VARCHAR NOT NULL,     -- running | done
            params         JSON NOT NULL,
            extractor      VARCHAR NOT NULL,
            model          VARCHAR,
            prompt_version VARCHAR NOT NULL,
            retired        INTEGER
        )
        """
    )
    con.execute(
        """
        CREATE TABLE reprocess_files (
            job_id   VARCHAR NOT NULL,
            file_id  VARCHAR NOT NULL,
            path     VARCHAR NOT NULL,
            "offset" BIGINT NOT NULL,            -- committed up to here
            PRIMARY KEY (job_id, file_id)
        )
        """
    )
    con.execute(
        """
        CREATE TABLE reprocess_items (           -- what a job re-extracted, and which beliefs it drew again
            job_id     VARCHAR NOT NULL,
            kind       VARCHAR NOT NULL,         -- message | belief
            session_id VARCHAR NOT NULL,         -- '' for a belief
            id         VARCHAR NOT NULL          -- a kept message's id, or a belief id
        )
        """
    )


@migration
def m020_near_duplicates_without_an_index(con: duckdb.DuckDBPyConnection) -> None:
    """Near duplicates are found by comparing each candidate with its own group (store/near.py); the set-similarity
    index and its DuckDB-hash fingerprint go."""
    con.execute("DROP TABLE IF EXISTS belief_words")
    con.execute("DELETE FROM store_meta WHERE name = 'word_index_hash'")


@migration
def m021_belief_terms(con: duckdb.DuckDBPyConnection) -> None:
    """Recall's term table and document lengths (store/terms.py), backfilled from the beliefs and evidence
    already stored."""
    from distiller.store import terms

    con.execute(
        """
        CREATE TABLE belief_terms (
            belief_id  VARCHAR NOT NULL,
            session_id VARCHAR NOT NULL,         -- '' for the statement's terms, else the quoting evidence's
            message_id VARCHAR NOT NULL,
            term       VARCHAR NOT NULL,         -- stemmed, no stop words (distiller/terms.py)
            tf         INTEGER NOT NULL
        )
        """
    )
    con.execute(
        """
        CREATE TABLE belief_lengths (
            belief_id  VARCHAR NOT NULL,
            statement  INTEGER,                  -- terms of the statement (BM25's document length, in two parts)
            quotes     INTEGER                   -- terms of all its quotes
        )
        """
    )
    terms.rebuild(con)


@migration
def m022_ingested_paths_apart(con: duckdb.DuckDBPyConnection) -> None:
    """The ledger's path goes: it repeated the file's path on every message read (5.2 MB of a 15.3 MB ledger for
    the 15.9 MB persona corpus), and all anything asks of it is whether messages were ever read from a path.

    `ingested_paths` keeps that answer, one row per (file, path) messages were read under, a file's old names
    included: `files` alone would not do, since it holds a file's current path only and `init --from-start`
    empties it. Backfilled from the ledger, so a migrated store answers as before."""
    con.execute(
        """
        CREATE TABLE ingested_paths (
            file_id VARCHAR NOT NULL,
            path    VARCHAR NOT NULL             -- a path messages of the file were first read under
        )
        """
    )
    con.execute("INSERT INTO ingested_paths SELECT DISTINCT file_id, path FROM ingested ORDER BY file_id, path")
    con.execute("ALTER TABLE ingested DROP COLUMN path")


@migration
def m023_ledger_reads_and_verdicts_apart(con: duckdb.DuckDBPyConnection) -> None:
    """The ledger's row narrows to what differs per message. The session, agent, file and run it was read in are
    one row of `ledger_reads` per (run, file, session, agent); its role, inter-session flag, decision and reason
    one row of `ledger_verdicts` per distinct combination (13 on the persona corpus); each `ledger` row names both
    by a small integer.

    Those eight values were 157 of the 223 bytes each message's row cost in the WAL (12.4 MB for the 15.9 MB
    persona corpus's 55,408 messages; 3.6 MB narrowed), repeated on every message. `ingested` stays, as a view
    with the columns and order it had, so every reader (and `SELECT *`) sees the ledger as before. Converted in
    place: each old row keeps every value, numbered in a stable order."""
    con.execute(
        """
        CREATE TABLE ledger_reads (
            read_no    INTEGER NOT NULL,         -- what ledger rows name it by: 1, 2, … in the order first written
            session_id VARCHAR NOT NULL,
            agent      VARCHAR NOT NULL,
            file_id    VARCHAR NOT NULL,
            run_id     VARCHAR NOT NULL          -- the run that read these messages
        )
        """
    )
    con.execute(
        """
        CREATE TABLE ledger_verdicts (
            verdict_no    INTEGER NOT NULL,      -- what ledger rows name it by: 1, 2, … in the order first written
            role          VARCHAR NOT NULL,
            inter_session BOOLEAN NOT NULL,
            decision      VARCHAR,               -- NULL on rows older than m002
            reason        VARCHAR
        )
        """
    )
    con.execute(
        """
        CREATE TABLE ledger (
            read_no    INTEGER NOT NULL,         -- ledger_reads.read_no: its session, agent, file and run
            verdict_no INTEGER NOT NULL,         -- ledger_verdicts.verdict_no: its role and screening verdict
            message_id VARCHAR NOT NULL,
            byte_start BIGINT NOT NULL,
            byte_end   BIGINT NOT NULL,
            ts         VARCHAR                   -- the transcript's own stamp, as written
        )
        """
    )
    con.execute(
        """
        INSERT INTO ledger_reads
        SELECT row_number() OVER (ORDER BY run_id, file_id, session_id, agent)::INTEGER, session_id, agent, file_id,
               run_id
        FROM (SELECT DISTINCT session_id, agent, file_id, run_id FROM ingested)
        """
    )
    con.execute(
        """
        INSERT INTO ledger_verdicts
        SELECT row_number() OVER (ORDER BY role, inter_session, decision, reason)::INTEGER, role, inter_session,
               decision, reason
        FROM (SELECT DISTINCT role, inter_session, decision, reason FROM ingested)
        """
    )
    con.execute(
        """
        INSERT INTO ledger
        SELECT r.read_no, v.verdict_no, i.message_id, i.byte_start, i.byte_end, i.ts
        FROM ingested i
        JOIN ledger_reads r USING (session_id, agent, file_id, run_id)
        JOIN ledger_verdicts v ON v.role = i.role AND v.inter_session = i.inter_session
                                  AND v.decision IS NOT DISTINCT FROM i.decision
                                  AND v.reason IS NOT DISTINCT FROM i.reason
        ORDER BY r.read_no, i.byte_start, i.message_id
        """
    )
    con.execute("DROP TABLE ingested")
    con.execute(
        """
        CREATE VIEW ingested AS
        SELECT r.session_id, l.message_id, r.agent, r.file_id, l.byte_start, l.byte_end, v.role, l.ts,
               v.inter_session, r.run_id, v.decision, v.reason
        FROM ledger l JOIN ledger_reads r USING (read_no) JOIN ledger_verdicts v USING (verdict_no)
        """
    )


def pending(applied: set[str]) -> list[tuple[str, Migration]]:
    return [(name, fn) for name, fn in MIGRATIONS if name not in applied]
