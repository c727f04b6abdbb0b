"""Recall and the profile over the state dir's database, opened read-only: what `distill recall`, `distill profile`
and the agents' hooks call."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from distiller.errors import DistillError
from distiller.recall import Rendered, render
from distiller.recall.profile import Profile, profile
from distiller.recall.select import Limits, select
from distiller.store.db import connect
from distiller.store.activation import Decay


def _existing(db_path: Path) -> None:
    if not db_path.exists():
        raise DistillError(f"no database at {db_path} yet: run `distill run` first")


def recall(db_path: Path, prompt: str = "", *, agent: str | None = None, limits: Limits = Limits(),
           max_chars: int = 2200, fmt: str = "block", with_profile: bool = False, wait_seconds: float = 5.0,
           settings: Decay | None = None, now: datetime | None = None) -> Rendered:
    """The recall block for `prompt` (may be empty: core and active tiers only)."""
    _existing(db_path)
    with connect(db_path, read_only=True, wait_seconds=wait_seconds) as con:
        lines = select(con, prompt, agent=agent, limits=limits, settings=settings,
                       now=now or datetime.now(timezone.utc))
        text = profile(con, db_path.parent, agent=agent).text if with_profile else None
    return render(lines, fmt=fmt, max_chars=max_chars, profile=text)


def user_profile(db_path: Path, *, agent: str | None = None, refresh: bool = False,
                 wait_seconds: float = 5.0) -> Profile:
    _existing(db_path)
    with connect(db_path, read_only=True, wait_seconds=wait_seconds) as con:
        return profile(con, db_path.parent, agent=agent, refresh=refresh)
