"""`distill reprocess`: a thin click command over distiller.pipeline.reprocess."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from distiller import extract, progress
from distiller.cli.belief_commands import _since as _when
from distiller.cli.context import CliState
from distiller.cli.examples import examples
from distiller.cli.extractor_options import (
    base_url_option,
    extractor_option,
    model_option,
)
from distiller.cli.format_option import forced_sources, format_option
from distiller.config import (
    DEFAULT_CONCURRENCY,
    MAX_CONCURRENCY,
    MIN_CONCURRENCY,
    override,
)
from distiller.extract.select import make_extractor
from distiller.pipeline import reprocess as api


def _named(name: str, model: str | None) -> str:
    if name in extract.names() and not extract.named(name).offline:
        return f"the {extract.named(name).label} extractor, model {model}"
    return f"the offline {name} extractor"


def _estimate_line(e: api.Estimate) -> str:
    """What the job will read and send; a price only when one will be paid (the offline rules cost nothing)."""
    line = f"estimate: {e.files} file(s), {e.bytes:,} bytes, {e.messages:,} messages → {e.requests} request(s)"
    if not e.paid:
        return line + f" to {_named(e.extractor, None)}: no API call, nothing to pay"
    return (line + f" to {_named(e.extractor, e.model)}, ≈{e.tokens:,} input tokens "
            f"(≈{e.cache_read_tokens / e.tokens if e.tokens else 0:.0%} read from the prompt cache), "
            f"≈${e.cost_usd:.4f}")


@examples("distill reprocess --dry-run                       # the estimate only",
          "distill reprocess --model claude-sonnet-4-5        # again with a better model (asks first)",
          "distill reprocess --since 30d --agent main --yes",
          "distill reprocess --batch-api --yes                # half price; run again later to collect")
@click.command("reprocess")
@click.option("--source", "sources", multiple=True, type=click.Path(path_type=Path),
              help="Agents dir, sessions dir or one transcript file (repeatable).  [default: as for run]")
@format_option
@click.option("--since", help="Only messages at or after this ISO date/time (or a span back: 30d).")
@click.option("--until", help="Only messages before this ISO date/time (or a span back: 30d).")
@click.option("--agent", "agents", multiple=True, help="Only this agent (repeatable).")
@click.option("--include-archives", is_flag=True, help="Also read .reset./.deleted. archives.")
@extractor_option
@model_option
@base_url_option
@click.option("--allow-expensive-model", is_flag=True, default=None, help="Allow Opus-class models.")
@click.option("--batch-api", is_flag=True, default=None,
              help="Submit through the Message Batches API (half price); later invocations (or --collect) collect "
              "and commit.")
@click.option("--collect", is_flag=True,
              help="Only collect and commit what the Message Batches API has ended; read and submit nothing new.")
@click.option("--concurrency", type=click.IntRange(MIN_CONCURRENCY, MAX_CONCURRENCY),
              help=f"Model requests in flight at once, {MIN_CONCURRENCY}-{MAX_CONCURRENCY} (fewer while the API "
                   f"answers 429/529).  [default: {DEFAULT_CONCURRENCY}]")
@click.option("--dry-run", is_flag=True, help="Only the estimate: requests, tokens and cost; nothing is sent or recorded.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation after the estimate.")
@click.option("--keep-old", is_flag=True, help="Keep beliefs only older extractors drew and this pass did not.")
@click.pass_obj
def reprocess_command(obj: CliState, sources: tuple[Path, ...], source_format: str | None, since: str | None,
                      until: str | None, agents: tuple[str, ...], include_archives: bool, extractor: str | None,
                      model: str | None, base_url: str | None,
                      allow_expensive_model: bool | None, batch_api: bool | None, collect: bool,
                      concurrency: int | None, dry_run: bool, yes: bool, keep_old: bool) -> None:
    """Distill whole transcripts again (messages already recorded too), without moving the live cursors;
    resumable, and never paying twice for the same job."""
    out = obj["out"]
    settings = override(obj["settings"], extractor=extractor, model=model, base_url=base_url,
                        allow_expensive_model=allow_expensive_model, batch_api=batch_api, concurrency=concurrency)
    settings = forced_sources(settings, sources, source_format)

    extractor_used = make_extractor(settings)
    named = _named(extractor_used.name, extractor_used.model)

    def confirm(estimate: api.Estimate) -> bool:
        click.echo(_estimate_line(estimate), err=True)
        return click.confirm(f"reprocess with {named}?", default=False, err=True)

    interactive = not (yes or dry_run or collect or out.as_json) and sys.stdin.isatty()
    if interactive:  # the estimate reads the whole history first: say so at once, not after a blank screen
        click.echo(f"reprocess with {named}: estimating what it would read and send first…", err=True)
    summary = api.reprocess(settings, sources, since=_when(since), until=_when(until), agents=agents,
                            include_archives=include_archives, dry_run=dry_run, keep_old=keep_old,
                            confirm=confirm if interactive else None, extractor=extractor_used,
                            progress=progress.on_stderr(out.as_json), collect=collect)
    t = summary.tally
    lines = [f"reprocess {summary.job_id}: {summary.status}" + (" (resumed)" if summary.resumed else "")
             + (f"; extractor: {t.extractor}" + (f" ({t.model})" if t.model else "")
                if summary.status in ("done", "budget", "submitted", "partial") else "")]
    if summary.estimate is not None:
        lines.append(_estimate_line(summary.estimate))
    if summary.status == "done":
        lines.append(f"read {t.files} file(s), {t.bytes_read:,} bytes, {t.messages:,} messages; "
                     f"{t.requests} request(s), {t.candidates} candidate(s)")
        if t.beliefs:
            lines.append("beliefs: " + ", ".join(f"{k} {v}" for k, v in sorted(t.beliefs.items()))
                         + (" (replayed: drawn again and already stored with this evidence, nothing changed)"
                            if t.beliefs.get("replayed") else ""))
        lines.append(f"retired (reprocessed): {summary.retired}")
    at_api = summary.batch_api
    if at_api.submitted or at_api.ended or at_api.committed or at_api.waiting:
        lines.append(f"Message Batches API: {at_api.submitted} batch(es) submitted, {at_api.ended} ended, "
                     f"{at_api.committed} committed; {at_api.waiting} still being processed")
    if summary.status == "submitted":
        lines.append("run `distill reprocess` again with the same options (or add --collect) to collect and commit "
                     "what the API has ended")
    elif summary.status == "partial":
        lines.append("everything submitted is committed; run the same `distill reprocess` without --collect to read "
                     "and submit the rest")
    elif summary.status == "already-done":
        lines.append("this job has already run to the end; change the model, prompt or scope to run another")
    out.emit(summary.as_dict(), "\n".join(lines))
