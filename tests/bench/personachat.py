"""Convert Synthetic-Persona-Chat conversations into OpenClaw transcripts (a development set, not a test).

    python tests/bench/personachat.py OUT_DIR [--csv PATH] [--limit N]

Every conversation becomes two sessions, one per speaker: that speaker is the user, the other the assistant. Each
session gets its own id (a UUID derived from the conversation number and the speaker), so no two collide. The
transcripts land in OUT_DIR/agents/persona-<split>/sessions/<id>.jsonl, and OUT_DIR/personas.jsonl maps every
session id to its conversation, split and the user's persona sentences (the ground truth). The data stays outside
the repository: this script only reads it.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "synthetic-persona-chat" / "valid.csv"
if not DATA.exists():
    DATA = Path("/work/shared/data/synthetic-persona-chat/valid.csv")
NAMESPACE = uuid.UUID("6f1c2d3e-4b5a-4c7d-8e9f-0a1b2c3d4e5f")
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
SPLITS = ("tune", "held-out")


@dataclass(frozen=True, slots=True)
class Conversation:
    number: int
    personas: tuple[tuple[str, ...], tuple[str, ...]]  # speaker 1's sentences, speaker 2's
    turns: tuple[tuple[int, str], ...]  # (speaker 1 or 2, text)

    @property
    def split(self) -> str:
        """Half the conversations to tune on, half to report on: by a hash of the number, not by position."""
        digest = hashlib.blake2b(f"spc-{self.number}".encode(), digest_size=1).digest()[0]
        return SPLITS[digest & 1]


@dataclass(frozen=True, slots=True)
class Session:
    session_id: str
    conversation: Conversation
    speaker: int  # the speaker who is the user

    @property
    def persona(self) -> tuple[str, ...]:
        return self.conversation.personas[self.speaker - 1]


def read_conversations(path: Path = DATA, limit: int | None = None) -> list[Conversation]:
    conversations = []
    with path.open(encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.DictReader(handle)):
            if limit is not None and number >= limit:
                break
            personas = tuple(
                tuple(line.strip() for line in row[column].splitlines() if line.strip())
                for column in ("user 1 personas", "user 2 personas")
            )
            turns = []
            for line in row["Best Generated Conversation"].splitlines():
                head, sep, text = line.partition(":")
                if sep and head.strip() in ("User 1", "User 2") and text.strip():
                    turns.append((int(head.strip()[-1]), text.strip()))
                elif turns and line.strip():  # a turn that runs over a line break
                    speaker, previous = turns[-1]
                    turns[-1] = (speaker, f"{previous}\n{line.strip()}")
            conversations.append(Conversation(number, (personas[0], personas[1]), tuple(turns)))
    return conversations


def sessions_of(conversations: list[Conversation]) -> list[Session]:
    return [
        Session(str(uuid.uuid5(NAMESPACE, f"spc-valid-{c.number}-user{speaker}")), c, speaker)
        for c in conversations
        for speaker in (1, 2)
    ]


def transcript_lines(session: Session) -> list[bytes]:
    """The session as OpenClaw writes it: a header, then one message entry per turn, each the child of the last."""
    started = START + timedelta(hours=6 * session.conversation.number + session.speaker)
    header = {"type": "session", "version": 3, "id": session.session_id, "timestamp": _iso(started),
              "cwd": "/home/user/.openclaw/workspace"}  # fmt: skip
    lines = [orjson.dumps(header)]
    parent = None
    for number, (speaker, text) in enumerate(session.conversation.turns):
        at = started + timedelta(seconds=40 * (number + 1))
        entry_id = hashlib.blake2b(f"{session.session_id}/{number}".encode(), digest_size=4).hexdigest()
        role = "user" if speaker == session.speaker else "assistant"
        message: dict = {"role": role, "content": [{"type": "text", "text": text}],
                         "timestamp": int(at.timestamp() * 1000)}  # fmt: skip
        if role == "assistant":
            message.update(api="anthropic-messages", provider="anthropic", model="claude-sonnet-4-5",
                           stopReason="stop")  # fmt: skip
        lines.append(orjson.dumps({"type": "message", "id": entry_id, "parentId": parent, "timestamp": _iso(at),
                                   "message": message}))  # fmt: skip
        parent = entry_id
    return lines


def write_transcripts(out: Path, sessions: list[Session]) -> None:
    labels = []
    for session in sessions:
        folder = out / "agents" / f"persona-{session.conversation.split}" / "sessions"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{session.session_id}.jsonl").write_bytes(b"\n".join(transcript_lines(session)) + b"\n")
        labels.append(orjson.dumps({"session_id": session.session_id, "conversation": session.conversation.number,
                                    "split": session.conversation.split, "speaker": session.speaker,
                                    "persona": session.persona}))  # fmt: skip
    (out / "personas.jsonl").write_bytes(b"\n".join(labels) + b"\n")


def _iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--csv", type=Path, default=DATA)
    parser.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    args = parser.parse_args()
    sessions = sessions_of(read_conversations(args.csv, args.limit))
    write_transcripts(args.out, sessions)
    print(f"{len(sessions)} sessions written to {args.out}")


if __name__ == "__main__":
    main()
