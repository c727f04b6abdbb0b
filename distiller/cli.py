"""The thin click layer: each command parses options, calls one library function and prints the result.

A command's result goes to stdout (one JSON document with --json, readable text without); diagnostics and
progress always go to stderr.
"""

from __future__ import annotations

import logging
import sys
from collections import Counter
from pathlib import Path

import click
import orjson

from distiller import batches_admin, pipeline
from distiller import beliefs as beliefs_api
from distiller.cli_beliefs import beliefs, runs_command
from distiller.cli_reprocess import reprocess_command
from distiller.config import load_settings, override
from distiller.errors import EXIT_ERROR, DistillError
from distiller.extract.select import make_extractor
from distiller.prefilter import CONTEXT, DROP, KEEP
from distiller.screen import Decision

log = logging.getLogger("distiller")


class Output:
    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json

    def emit(self, payload: dict, human: str) -> None:
        if self.as_json:
            click.echo(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS).decode())
        else:
            click.echo(human)


def _configure_logging(verbose: int, quiet: bool) -> None:
    level = logging.ERROR if quiet else logging.INFO if verbose else logging.WARNING
    if verbose > 1:
        level = logging.DEBUG
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("distill: %(message)s"))
    log.handlers[:] = [handler]
    log.setLevel(level)
    log.propagate = False


@click.group(context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("state"),
    envvar="DISTILL_STATE_DIR",
    show_envvar=True,
    help="Directory holding the database, the run lock and distill.toml.",
)
@click.option(
    "--config", "config_file", type=click.Path(dir_okay=False, path_type=Path), help="Settings file (TOML)."
)
@click.option("--json", "as_json", is_flag=True, envvar="DISTILL_JSON", help="Machine-readable JSON on stdout.")
@click.option("-v", "--verbose", count=True, help="More diagnostics on stderr (-vv for debug).")
@click.option("-q", "--quiet", is_flag=True, help="Only errors on stderr.")
@click.version_option(package_name="distiller", prog_name="distill")
@click.pass_context
def cli(ctx: click.Context, state_dir: Path, config_file: Path | None, as_json: bool, verbose: int, quiet: bool):
    """Distill AI-agent transcripts into atomic beliefs about the user, kept in DuckDB."""
    _configure_logging(verbose, quiet)
    ctx.obj = {"settings": load_settings(state_dir, config_file), "out": Output(as_json)}


source_option = click.option(
    "--source",
    "sources",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Agents dir, sessions dir or one transcript file (repeatable). "
    "Default: $OPENCLAW_STATE_DIR/agents or ~/.openclaw/agents.",
)


def _counts(counter: dict) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


LEARNED_SHOWN = 25
RUN_COUNTERS = (("decisions", "decisions"), ("dropped", "dropped"), ("secrets redacted", "redactions"),
                ("skipped lines", "skipped"), ("skipped files", "files_skipped"), ("files", "file_events"))


def _counter_lines(d: dict, counters: tuple[tuple[str, str], ...]) -> list[str]:
    return [f"{label}: {_counts(d[key])}" for label, key in counters if d.get(key)]
SHOWN = {"kept": (KEEP, CONTEXT), "dropped": (DROP,), "all": (KEEP, CONTEXT, DROP)}


def _decision_json(decision: Decision) -> dict:
    message = decision.message
    return {
        "message_id": decision.item_id,
        "agent": message.agent,
        "session": message.session_id,
        "role": message.role,
        "ts": message.ts,
        "decision": decision.decision,
        "reason": decision.reason,
        "text": decision.text,
    }


def _decision_row(decision: Decision) -> str:
    text = " ".join(decision.text.split())
    return (
        f"{decision.decision:<7} {decision.reason:<18} {decision.message.role:<9} {decision.item_id:<12} "
        f"{text[:70] + ('…' if len(text) > 70 else '')}"
    )


def _distill_summary(d: dict) -> str:
    """Which extractor ran and what came of it: the part of a run summary about beliefs."""
    extractor = d["extractor"] + (f" ({d['model']})" if d["model"] else "")
    lines = [f"extractor: {extractor}; {d['batches']} batch(es), {d['requests']} request(s), "
             f"{d['candidates']} candidate(s)"]
    if d["beliefs"]:
        lines.append(f"beliefs: {_counts(d['beliefs'])}")
    if d["rejected"]:
        lines.append(f"rejected candidates: {_counts(d['rejected'])}")
    if d["tokens"] or d["cost_usd"]:
        lines.append(f"model tokens: {d['tokens']:,} (cache read {d['cache_read_tokens']:,}), cost ${d['cost_usd']:.4f}")
    if d["estimated_tokens"]:
        lines.append(f"estimate: ≈{d['estimated_tokens']:,} input tokens, ≈${d['estimated_cost_usd']:.4f}")
    if d["quarantined_requests"]:
        lines.append(f"quarantined requests: {d['quarantined_requests']} (see `distill batches list`)")
    if d["submitted"]:
        lines.append(f"submitted to the Message Batches API: {', '.join(d['submitted'])} (the next runs collect them)")
    if d["staged"]:
        lines.append("staged for an external agent:\n  " + "\n  ".join(d["staged"]))
    if d["resumed_batches"]:
        lines.append(f"resumed batches: {d['resumed_batches']}")
    if d["budget_stop"]:
        lines.append(f"stopped: {d['budget_stop']}")
    return "\n".join(lines)


def _run_summary(d: dict, dry_run: bool) -> str:
    lines = [
        f"{'dry run: would read' if dry_run else 'read'} {d['files']} file(s), {d['bytes_read']:,} bytes, "
        f"{d['lines']:,} lines",
        f"messages: {d['messages']:,}" + (f" ({_counts(d['roles'])})" if d["roles"] else ""),
    ]
    lines += _counter_lines(d, RUN_COUNTERS)
    lines.append(_distill_summary(d))
    return "\n".join(lines)


@cli.command()
@source_option
@click.option("--dry-run", is_flag=True, help="Read, screen and plan batches with token and cost estimates; record nothing.")
@click.option(
    "--show",
    type=click.Choice(sorted(SHOWN)),
    help="Print the decision on every newly read message (one JSON object each with --json); kept = keep + context.",
)
@click.option("--extractor", type=click.Choice(["auto", "anthropic", "rules"]),
              help="auto: Anthropic when ANTHROPIC_API_KEY is set, else the offline rules.  [default: auto]")
@click.option("--model", help="Anthropic model.  [default: claude-haiku-5-5]")
@click.option("--allow-expensive-model", is_flag=True, default=None, help="Allow Opus-class models.")
@click.option("--budget-usd", type=float, help="Stop this run before it would spend more (0: no limit).")
@click.option("--budget-tokens", type=int, help="Stop this run before it would use more model tokens (0: no limit).")
@click.option("--no-llm", is_flag=True, help="Stage batches for an external agent (see `distill commit`).")
@click.option("--batch-api", is_flag=True, default=None,
              help="Submit through the Message Batches API (half price); later runs collect the results.")
@click.pass_obj
def run(obj: dict, sources: tuple[Path, ...], dry_run: bool, show: str | None, extractor: str | None,
        model: str | None, allow_expensive_model: bool | None, budget_usd: float | None, budget_tokens: int | None,
        no_llm: bool, batch_api: bool | None) -> None:
    """Read the new tail of every transcript, screen it, distill it into verified beliefs, commit exactly once."""
    out: Output = obj["out"]
    settings = override(obj["settings"], extractor="external" if no_llm else extractor, model=model,
                        allow_expensive_model=allow_expensive_model, budget_usd=budget_usd,
                        budget_tokens=budget_tokens, batch_api=batch_api)
    printer = None
    if show is not None:
        wanted = SHOWN[show]

        def printer(decision: Decision) -> None:
            if decision.decision in wanted:
                if out.as_json:
                    click.echo(orjson.dumps(_decision_json(decision)).decode())
                else:
                    click.echo(_decision_row(decision))

    summary = pipeline.run_once(settings, sources, dry_run=dry_run, show=printer)
    d = summary.as_dict()
    human = _run_summary(d, dry_run)
    if summary.run_id is not None and d["beliefs"] and not out.as_json:
        learned = beliefs_api.from_run(settings, summary.run_id)
        human += "\nbeliefs from this run:\n" + "\n".join(
            f"  [{b.category}, {b.status}, {b.confidence:.2f}] {b.statement}" for b in learned[:LEARNED_SHOWN]
        ) + (f"\n  … and {len(learned) - LEARNED_SHOWN} more (`distill beliefs list`)"
             if len(learned) > LEARNED_SHOWN else "")
    if show is not None and out.as_json:
        click.echo(human, err=True)
    else:
        out.emit(d, human)


@cli.command()
@click.argument("batch_id")
@click.option("--beliefs", "beliefs_file", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="JSONL written by the external agent: one candidate per line, citing the batch's item ids.")
@click.pass_obj
def commit(obj: dict, batch_id: str, beliefs_file: Path) -> None:
    """Verify and commit an external agent's beliefs for a batch staged by `distill run --no-llm`."""
    tally = batches_admin.commit_external(obj["settings"], batch_id, beliefs_file)
    d = tally.as_dict()
    obj["out"].emit({"batch_id": batch_id, **d}, f"committed {batch_id}\n" + _distill_summary(d))


@cli.group()
def batches() -> None:
    """Batches waiting for a model, staged for an external agent, or quarantined after repeated refusals."""


@batches.command("list")
@click.pass_obj
def batches_list(obj: dict) -> None:
    """List pending, staged and quarantined batches."""
    found = batches_admin.list_batches(obj["settings"])
    human = "\n".join(
        f"{b.batch_id}  {b.status:<11} {b.requests} request(s), {b.items} item(s)"
        + (f"  {b.path}" if b.path else "") + (f"  error: {b.error}" if b.error else "")
        for b in found
    ) or "no batches"
    obj["out"].emit({"batches": [b.as_dict() for b in found]}, human)


@batches.command("retry")
@click.argument("batch_id")
@click.option("--extractor", type=click.Choice(["auto", "anthropic", "rules"]), help="[default: auto]")
@click.pass_obj
def batches_retry(obj: dict, batch_id: str, extractor: str | None) -> None:
    """Extract a quarantined batch again and commit what now succeeds."""
    settings = override(obj["settings"], extractor=extractor)
    tally = batches_admin.retry(settings, batch_id, make_extractor(settings))
    d = tally.as_dict()
    obj["out"].emit({"batch_id": batch_id, **d}, f"retried {batch_id}\n" + _distill_summary(d))


@batches.command("discard")
@click.argument("batch_id")
@click.pass_obj
def batches_discard(obj: dict, batch_id: str) -> None:
    """Unstage a staged batch (and later ones; their messages are read again) or give up on a quarantined one."""
    affected = batches_admin.discard(obj["settings"], batch_id)
    obj["out"].emit({"discarded": affected}, f"discarded: {', '.join(affected)}")


@cli.command()
@source_option
@click.option("--from-now", "mode", flag_value="from-now", help="Mark everything present as already read.")
@click.option("--from-start", "mode", flag_value="from-start", help="Forget all cursors: reread from byte 0.")
@click.pass_obj
def init(obj: dict, sources: tuple[Path, ...], mode: str | None) -> None:
    """Create the state directory and database (optionally setting where reading starts)."""
    summary = pipeline.init(obj["settings"], sources, mode=mode or "create")
    human = f"state ready: {summary.db_path}"
    if summary.mode == "from-now":
        human += f"\nmarked {summary.files_marked} file(s) as read up to their last complete line"
    elif summary.mode == "from-start":
        human += f"\nforgot {summary.files_reset} cursor(s); the next run rereads from byte 0 (known messages are skipped)"
    obj["out"].emit(summary.as_dict(), human)


@cli.command()
@source_option
@click.pass_obj
def status(obj: dict, sources: tuple[Path, ...]) -> None:
    """Tracked files, bytes not yet read, and the last run's counters."""
    report = pipeline.status(obj["settings"], sources)
    d = report.as_dict()
    d["beliefs"] = beliefs_api.counts(obj["settings"]).as_dict()
    waiting = batches_admin.list_batches(obj["settings"])
    d["batches"] = dict(Counter(b.status for b in waiting))
    d["quarantined"] = [b.as_dict() for b in waiting if b.status == "quarantined"]
    lines = [
        f"database: {d['db']}",
        f"files tracked: {d['files_tracked']} (gone: {d['files_gone']}, untracked: {d['files_untracked']})",
        f"bytes behind: {d['bytes_behind']:,}",
        f"messages ingested: {d['messages_ingested']:,}",
        f"beliefs: {d['beliefs']['total']:,}" + (f" ({_counts(d['beliefs']['by_status'])})" if d["beliefs"]["total"] else ""),
    ]
    if d["batches"]:
        lines.append(f"batches waiting: {_counts(d['batches'])} (see `distill batches list`)")
    lines += [f"  quarantined {q['batch_id']}: {q['error']}" for q in d["quarantined"]]
    last = d["last_run"]
    if last is None:
        lines.append("last run: never")
    else:
        lines.append(f"last run: {last['started_at']} {last['status']}, {last.get('messages', 0):,} messages")
        lines += [f"  {line}" for line in _counter_lines(last, RUN_COUNTERS[:4])]
        if last.get("error"):
            lines.append(f"  error: {last['error']}")
    obj["out"].emit(d, "\n".join(lines))


cli.add_command(beliefs)
cli.add_command(runs_command)
cli.add_command(reprocess_command)


def main() -> None:
    """Entry point: errors become one clear line on stderr and an exit code, never a traceback."""
    try:
        cli.main(prog_name="distill", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except DistillError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    except Exception as exc:  # a bug: say so plainly; -vv shows the traceback
        if log.isEnabledFor(logging.DEBUG):
            log.exception("internal error")
        click.echo(f"Error: internal error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(EXIT_ERROR)
