"""The current columns of the tables the store writes in bulk: what `bulk.rows` parses each packed column as.

The migrations create and evolve the tables (their DDL is history and never edited); this is the one description
of where they ended, for the code. tests/test_store.py checks it against a freshly migrated database, so the two
cannot drift apart.
"""

from __future__ import annotations

COLUMNS: dict[str, dict[str, str]] = {
    "beliefs": {
        "belief_id": "VARCHAR", "statement": "VARCHAR", "words": "VARCHAR", "sig": "VARCHAR", "category": "VARCHAR",
        "scope": "VARCHAR", "subject": "VARCHAR", "attribute": "VARCHAR", "confidence": "DOUBLE",
        "evidence_type": "VARCHAR", "importance": "INTEGER", "decay_sensitivity": "VARCHAR", "status": "VARCHAR",
        "valid_from": "VARCHAR", "valid_to": "VARCHAR", "superseded_by": "VARCHAR", "supersedes": "VARCHAR",
        "conflicts_with": "VARCHAR", "evidence_count": "INTEGER", "sessions": "INTEGER",
        "first_seen": "TIMESTAMPTZ", "last_seen": "TIMESTAMPTZ", "created_at": "TIMESTAMPTZ",
        "updated_at": "TIMESTAMPTZ", "run_id": "VARCHAR", "extractor": "VARCHAR", "model": "VARCHAR",
        "prompt_version": "VARCHAR",
    },
    "evidence": {
        "belief_id": "VARCHAR", "session_id": "VARCHAR", "message_id": "VARCHAR", "agent": "VARCHAR",
        "file": "VARCHAR", "byte_start": "BIGINT", "byte_end": "BIGINT", "ts": "TIMESTAMPTZ", "quote": "VARCHAR",
        "statement": "VARCHAR", "confidence": "DOUBLE", "explicit": "BOOLEAN", "run_id": "VARCHAR",
        "added_at": "TIMESTAMPTZ",
    },
    "ingested": {
        "session_id": "VARCHAR", "message_id": "VARCHAR", "agent": "VARCHAR", "file_id": "VARCHAR",
        "byte_start": "BIGINT", "byte_end": "BIGINT", "role": "VARCHAR", "ts": "VARCHAR", "inter_session": "BOOLEAN",
        "run_id": "VARCHAR", "decision": "VARCHAR", "reason": "VARCHAR",
    },  # a view since m023: `ledger` joined with `ledger_reads` and `ledger_verdicts`, the columns the table had
    "ledger": {
        "read_no": "INTEGER", "verdict_no": "INTEGER", "message_id": "VARCHAR", "byte_start": "BIGINT",
        "byte_end": "BIGINT", "ts": "VARCHAR",
    },
    "ledger_verdicts": {
        "verdict_no": "INTEGER", "role": "VARCHAR", "inter_session": "BOOLEAN", "decision": "VARCHAR",
        "reason": "VARCHAR",
    },
    "ledger_reads": {
        "read_no": "INTEGER", "session_id": "VARCHAR", "agent": "VARCHAR", "file_id": "VARCHAR", "run_id": "VARCHAR",
    },
    "ingested_paths": {"file_id": "VARCHAR", "path": "VARCHAR"},
    "belief_terms": {
        "belief_id": "VARCHAR", "session_id": "VARCHAR", "message_id": "VARCHAR", "term": "VARCHAR", "tf": "INTEGER",
    },
    "belief_lengths": {"belief_id": "VARCHAR", "statement": "INTEGER", "quotes": "INTEGER"},
    "files": {
        "file_id": "VARCHAR", "path": "VARCHAR", "agent": "VARCHAR", "session_id": "VARCHAR", "dev": "UBIGINT",
        "inode": "UBIGINT", "size": "BIGINT", "mtime_ns": "BIGINT", "offset": "BIGINT", "tail_digest": "VARCHAR",
        "state": "VARCHAR", "first_seen": "TIMESTAMPTZ", "updated_at": "TIMESTAMPTZ", "session_skip": "VARCHAR",
    },
}


def types(names: str) -> dict[str, str]:
    """{name: type} for these space-separated column names, each as the beliefs or evidence table has it (a name
    both tables have has the same type in both)."""
    merged = COLUMNS["evidence"] | COLUMNS["beliefs"]
    return {name: merged[name] for name in names.split()}
