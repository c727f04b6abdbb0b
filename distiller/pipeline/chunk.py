"""A chunk: what is read until a batch is full — the messages, and the cursor moves that commit with them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from distiller.config import Settings
from distiller.pipeline.read import FileRead
from distiller.records import Cursor, Message, message_time
from distiller.screen import Screened, echo, join_split, screen
from distiller.track import ReadPlan

# What a pending message costs in memory beyond its text (record, ids, ledger lists): a chunk of many short
# messages is bounded too, not only one of a few long ones.
MESSAGE_OVERHEAD_BYTES = 512

# A message as read, waiting for its chunk to be screened: the message, the session skip it was read under, the
# file's id and reading, or (read by a scan worker) the file's id and its screened result.
Pending = tuple[Message, str | None, str, FileRead] | tuple[Screened, str]


def cost(message: Message) -> int:
    """What a pending message counts toward `commit_every_bytes`: ids and paths are held (and committed) per
    message as well, not only the text."""
    return (len(message.text) + len(message.message_id) + len(message.parent_id or "") + len(message.session_id)
            + len(message.file) + MESSAGE_OVERHEAD_BYTES)


def screen_read(message: Message, skip: str | None, read: FileRead, settings: Settings) -> Screened:
    """Screen the next message of a file's reading, redact a secret split across it and the message before, and
    carry its user text on to the file's next message."""
    screened = screen(
        message,
        session_skip=skip,
        previous_user_text=read.previous_user_text,
        assistant_decision=settings.assistant_decision,
        extra_blocks=settings.extra_injected_blocks,
    )
    join_split(read.previous, screened)
    read.previous = screened
    if message.role == "user":
        read.previous_user_text = screened.decisions[-1].text or read.previous_user_text
    return screened


@dataclass(frozen=True)
class Window:
    """A time window on the messages' own timestamps (reprocess --since/--until): a message outside it is skipped
    before it is screened, so it is not the previous user turn of the next one either."""

    since: datetime | None = None
    until: datetime | None = None

    def excludes(self, message: Message) -> str | None:
        """Why the message is left out (a counted skip), or None."""
        at = message_time(message.ts)
        if at is None:
            return "no_timestamp"
        if (self.since and at < self.since) or (self.until and at >= self.until):
            return "outside_window"
        return None


@dataclass
class Chunk:
    """Collects read messages and cursor moves until `full`; `screened` screens them in reading order, `moves`
    pairs each cursor with the offset it replaces, and `advance` starts the next chunk where this one ends.

    Every path that distills (run, reprocess) screens through a Chunk, so this is where screening is the same for
    all: `echoes` has no default, so no path can leave the recall-echo screen out by not thinking of it (reprocess
    did: pasted recall lines were evidence again). echo.EMPTY is for a store that does not exist yet."""

    settings: Settings
    echoes: echo.EchoIndex  # the live beliefs' statements as the run began (run.echo_index): their echoes go
    pending: list[Pending] = field(default_factory=list)
    pending_bytes: int = 0
    cursors: dict[str, Cursor] = field(default_factory=dict)
    expected: dict[str, int | None] = field(default_factory=dict)

    def begin(self, plan: ReadPlan) -> None:
        self.expected.setdefault(plan.target.file_id, plan.expected_offset)

    def add(self, message: Message, skip: str | None, file_id: str, read: FileRead) -> None:
        self.pending.append((message, skip, file_id, read))
        self.pending_bytes += cost(message)

    def add_screened(self, screened: list[Screened], file_id: str, size: int) -> None:
        """A file's messages a scan worker read and screened already; `size` is the sum of their `cost`."""
        self.pending.extend([(entry, file_id) for entry in screened])
        self.pending_bytes += size

    @property
    def full(self) -> bool:
        return self.pending_bytes >= self.settings.commit_every_bytes

    def move(self, cursor: Cursor) -> None:
        self.cursors[cursor.file_id] = cursor

    def moves(self) -> list[tuple[Cursor, int | None]]:
        return [(cursor, self.expected[file_id]) for file_id, cursor in self.cursors.items()]

    def screened(self) -> list[tuple[Screened, str]]:
        """Screen the chunk in reading order, in one run: screening message after message keeps its code and
        patterns in the CPU caches, which reading the large tool results in between would evict."""
        settings = self.settings
        screened_all = []
        for entry in self.pending:
            if len(entry) == 2:
                screened_all.append(entry)
            else:
                message, skip, file_id, read = entry
                screened_all.append((screen_read(message, skip, read, settings), file_id))
        if self.echoes:
            screened_all = [(echo.without_echoes(screened, self.echoes), file_id)
                            for screened, file_id in screened_all]
        return screened_all

    def advance(self) -> None:
        """The next chunk's cursors start where this one ends, whether it was committed, staged, submitted or only
        planned."""
        for file_id, cursor in self.cursors.items():
            self.expected[file_id] = cursor.offset
        self.pending.clear()
        self.pending_bytes = 0
        self.cursors.clear()
