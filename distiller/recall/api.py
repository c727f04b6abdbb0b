"""Recall and the profile over the state dir's database, opened read-only (a model profile's call is recorded in
a write transaction of its own): what `distill recall` and `distill profile` call."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from distiller import extract
from distiller.config import Settings
from distiller.errors import DistillError
from distiller.recall import Rendered, profile, render
from distiller.recall.lines import Limits
from distiller.recall.profile import Profile, Sentence
from distiller.recall.select import select
from distiller.store import batch_rows
from distiller.store.activation import Decay
from distiller.store.batch_rows import CallUsage
from distiller.store.db import connect, transaction


def _existing(db_path: Path) -> None:
    if not db_path.exists():
        raise DistillError(f"no database at {db_path} yet: run `distill run` first")


def recall(db_path: Path, prompt: str = "", *, agent: str | None = None, limits: Limits = Limits(),
           max_chars: int = 2200, fmt: str = "block", with_profile: bool = False, wait_seconds: float = 5.0,
           settings: Decay | None = None, now: datetime | None = None, model: Settings | None = None) -> Rendered:
    """The recall block for `prompt` (may be empty: core and active tiers only), with the profile first if asked:
    the model's (`model`) when a current one is cached, else the rules'; recall itself never calls a model."""
    _existing(db_path)
    text = None
    if with_profile:
        text = user_profile(db_path, agent=agent, wait_seconds=wait_seconds, model=model, call_model=False).text
    with connect(db_path, read_only=True, wait_seconds=wait_seconds) as con:
        lines = select(con, prompt, agent=agent, limits=limits, settings=settings,
                       now=now or datetime.now(UTC))
    return render(lines, fmt=fmt, max_chars=max_chars, profile=text)


MAX_TOKENS = 600  # the profile's reply: three sentences and their ids


def composer(settings: Settings | None) -> str:
    """Who writes the profile, as the extractor is chosen (the registry's `resolve`: `auto` is the Anthropic API
    when ANTHROPIC_API_KEY is set, else the rules): "<backend>:<model>" for a backend that calls a model, "rules"
    for an offline one (the rules' template) or no settings. Part of the cache key: a model's profile and the
    rules' are kept apart."""
    if settings is None:
        return profile.TEMPLATE
    backend = extract.resolve(settings.extractor)
    return profile.TEMPLATE if backend.offline else f"{backend.name}:{settings.model}"


def user_profile(db_path: Path, *, agent: str | None = None, refresh: bool = False, wait_seconds: float = 5.0,
                 model: Settings | None = None, call_model: bool = True) -> Profile:
    """The profile, cached while its beliefs are unchanged. With `model` (the settings naming the extractor, as
    `run` reads them), written by that backend when it completes text (extract.base.CompletesText: the Anthropic
    and OpenAI-compatible backends), within the budgets, and verified sentence by sentence; otherwise, or when
    nothing the model wrote passes, by the rules' template. No database connection is held across the model
    call. `call_model=False`: a current cached model profile, else the rules' (no call)."""
    _existing(db_path)
    name = composer(model)
    with connect(db_path, read_only=True, wait_seconds=wait_seconds) as con:
        rows = profile.candidates(con, agent)
        spent = batch_rows.spent_today(con) if name != profile.TEMPLATE else (0, 0.0)
    wanted = profile.key(rows, agent, name)
    if not refresh:
        hit = profile.cached(db_path.parent, agent, name, wanted)
        if hit is not None:
            return hit
    if name != profile.TEMPLATE and not call_model:
        return user_profile(db_path, agent=agent, refresh=refresh, wait_seconds=wait_seconds)
    sentences, used, note, usage = profile.compose(rows), profile.TEMPLATE, None, None
    if model is not None and name != profile.TEMPLATE and rows:
        written, note, usage = _by_model(model, rows, spent)
        if written:
            sentences, used = written, name
    if usage:
        with connect(db_path, wait_seconds=wait_seconds) as con, transaction(con):
            batch_rows.record_calls(con, "profile", f"profile-{wanted}", usage)
    made = Profile(sentences, wanted, False, used, note)
    profile.save(db_path.parent, agent, name, made)
    return made


def _by_model(settings: Settings, rows: list[profile.Row],
              spent: tuple[int, float]) -> tuple[tuple[Sentence, ...], str | None, tuple[CallUsage, ...]]:
    """(verified sentences, a note on what was not used, the calls' usage). The worst case of the call (its
    estimated input and all MAX_TOKENS of output, at the backend's rates) is held against the day's and the run's
    budgets before the extractor is even made."""
    from distiller import prices
    from distiller.extract.base import BadRequest, CompletesText

    backend = extract.resolve(settings.extractor)
    user = profile.prompt(rows)
    estimated = (len(profile.SYSTEM) + len(user)) // 4 + 1
    worst_usd = prices.cost(backend.rates(settings), estimated, MAX_TOKENS, 0, 0)
    worst_tokens = estimated + MAX_TOKENS
    for limit, already, worst, name in ((settings.budget_usd_per_day, spent[1], worst_usd, "budget_usd_per_day"),
                                        (settings.budget_tokens_per_day, spent[0], worst_tokens,
                                         "budget_tokens_per_day"),
                                        (settings.budget_usd, 0, worst_usd, "budget_usd"),
                                        (settings.budget_tokens, 0, worst_tokens, "budget_tokens")):
        if limit and already + worst > limit:
            return (), f"{name} would be passed: composed by the rules", ()
    writer = backend.make(settings)
    if not isinstance(writer, CompletesText):
        return (), f"the {backend.label} extractor does not write text: composed by the rules", ()
    try:
        reply, usage = writer.complete(profile.SYSTEM, user, MAX_TOKENS)
    except BadRequest as exc:
        return (), f"the model refused ({exc}): composed by the rules", exc.usage
    sentences, dropped = profile.verified(reply, rows)
    note = None
    if dropped:
        note = "model sentences dropped: " + ", ".join(f"{k} {v}" for k, v in sorted(dropped.items()))
        note += "" if sentences else "; composed by the rules"
    return sentences, note, (usage,)
