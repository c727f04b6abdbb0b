"""The thin click layer: each command parses options, calls one library function and prints the result.

A command's result goes to stdout (one JSON document with --json, readable text without); diagnostics and
progress always go to stderr.
"""

from __future__ import annotations

import logging
import re
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click
import orjson
from click.core import ParameterSource

from distiller import install, pipeline, progress
from distiller import manage as beliefs_api
from distiller.cli.belief_commands import beliefs, runs_command
from distiller.cli.context import CliState, Output
from distiller.cli.examples import examples
from distiller.cli.extractor_options import RunOptions, extractor_option, run_options
from distiller.cli.format_option import forced_sources, format_option
from distiller.cli.recall_commands import hook_group, profile_command, recall_command
from distiller.cli.reprocess_command import reprocess_command
from distiller.config import (
    Settings,
    describe,
    load_settings,
    override,
    paths,
)
from distiller.doctor import diagnose
from distiller.errors import EXIT_ERROR, DistillError, os_fault
from distiller.events import Tally
from distiller.extract.select import check_options, make_extractor
from distiller.pipeline import batches_admin
from distiller.screen import Decision
from distiller.screen.prefilter import CONTEXT, DROP, KEEP
from distiller.terminal import EscapingFormatter, printable

if TYPE_CHECKING:
    from distiller.schedule import Outcome

log = logging.getLogger("distiller")
CommandFn = TypeVar("CommandFn", bound=Callable[..., None])  # a command's function, before click wraps it


def _configure_logging(verbose: int, quiet: bool) -> None:
    level = logging.ERROR if quiet else logging.INFO if verbose else logging.WARNING
    if verbose > 1:
        level = logging.DEBUG
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(EscapingFormatter("distill: %(message)s"))
    log.handlers[:] = [handler]
    log.setLevel(level)
    log.propagate = False


# Global options a user may also type after the command (`distill beliefs list --json`).
_GLOBAL_FLAGS = frozenset({"--json", "--verbose", "--quiet", "-q"})
_GLOBAL_WITH_VALUE = "--state-dir"
_GROUP_WITH_VALUE = frozenset({"--state-dir", "--config"})


def hoist_global_options(args: list[str]) -> list[str]:
    """Move global options found after the command name in front of it; `--` ends the search."""
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "--":
        i += 2 if args[i] in _GROUP_WITH_VALUE else 1
    if i >= len(args) or args[i] == "--":
        return list(args)
    moved: list[str] = []
    kept: list[str] = []
    rest = args[i + 1:]
    j = 0
    while j < len(rest):
        arg = rest[j]
        if arg == "--":
            kept += rest[j:]
            break
        if arg in _GLOBAL_FLAGS or re.fullmatch(r"-v+", arg) or arg.startswith(_GLOBAL_WITH_VALUE + "="):
            moved.append(arg)
        elif arg == _GLOBAL_WITH_VALUE and j + 1 < len(rest):
            moved += rest[j:j + 2]
            j += 1
        else:
            kept.append(arg)
        j += 1
    return [*args[:i], *moved, args[i], *kept]


class DistillGroup(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_global_options(args))

    def main(self, *args: Any, **kwargs: Any) -> NoReturn:  # click's own parameters, passed on as they came
        """Errors become one clear line on stderr and an exit code, never a traceback (in-process too)."""
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except click.exceptions.Abort:
            click.echo("Aborted.", err=True)
            sys.exit(130)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except DistillError as exc:
            click.echo(f"Error: {printable(str(exc))}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            sys.exit(130)
        except OSError as exc:  # a fault of the machine no layer below named: still one line, with the path
            click.echo(f"Error: {printable(str(os_fault('use', exc.filename or 'a file', exc)))}", err=True)
            sys.exit(EXIT_ERROR)
        except Exception as exc:  # a bug: say so plainly; -vv shows the traceback
            if log.isEnabledFor(logging.DEBUG):
                log.exception("internal error")
            click.echo(f"Error: internal error: {type(exc).__name__}: {printable(str(exc))}", err=True)
            sys.exit(EXIT_ERROR)
        sys.exit(code if isinstance(code, int) else 0)


_ORIGINS: dict[ParameterSource | None, str] = {ParameterSource.COMMANDLINE: "flag --state-dir", ParameterSource.ENVIRONMENT: "env DISTILL_STATE_DIR"}


@click.group(cls=DistillGroup, context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="DISTILL_STATE_DIR",
    show_envvar=True,
    help="Directory holding the database, the run lock and distill.toml.  "
    "[default: $XDG_STATE_HOME/distiller, i.e. ~/.local/state/distiller]",
)
@click.option(
    "--config", "config_file", type=click.Path(dir_okay=False, path_type=Path), help="Settings file (TOML)."
)
@click.option("--json", "as_json", is_flag=True, envvar="DISTILL_JSON", help="Machine-readable JSON on stdout.")
@click.option("-v", "--verbose", count=True, help="More diagnostics on stderr (-vv for debug).")
@click.option("-q", "--quiet", is_flag=True, help="Only errors: no text summary (JSON is still printed with --json).")
@click.version_option(package_name="distiller", prog_name="distill")
@click.pass_context
def cli(ctx: click.Context, state_dir: Path | None, config_file: Path | None, as_json: bool, verbose: int,
        quiet: bool) -> None:
    """Distill AI-agent transcripts into atomic beliefs about the user, kept in DuckDB.

    Global options (--json, -v, -q, --state-dir) may come before or after the command."""
    _configure_logging(verbose, quiet)
    origin = _ORIGINS.get(ctx.get_parameter_source("state_dir"), "default")
    settings = load_settings(state_dir, config_file, state_dir_origin=origin)
    log.info("state dir: %s (%s)", settings.state_dir, origin)
    ctx.obj = {"settings": settings, "out": Output(as_json, quiet), "config_file": config_file}


source_option = click.option(
    "--source",
    "sources",
    multiple=True,
    type=click.Path(path_type=Path, readable=False),  # an unreadable source is skipped with a reason, not fatal
    help="A tree of OpenClaw, Claude Code, Codex or Gemini CLI transcripts, a dir in one, or one transcript file "
    "(repeatable). Default: every such tree present (~/.openclaw/agents, ~/.claude/projects, ~/.codex/sessions, "
    "~/.gemini/tmp).",
)


def _counts(counter: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


LEARNED_SHOWN = 25


def _counter_lines(counters: Sequence[tuple[str, Mapping[str, int]]]) -> list[str]:
    return [f"{label}: {_counts(counter)}" for label, counter in counters if counter]


# What `cleaned` counts, by the prefix of its keys, in words; injected blocks are the recall (memory) blocks.
STRIPPED = (("stripped", "recall blocks"), ("envelope", "envelope parts"),
            ("synthetic", "synthetic turns"), ("media", "media notes"), ("split", "queued batches split"))


def _stripped_lines(cleaned: Mapping[str, int], redactions: Mapping[str, int]) -> list[str]:
    """Always said, zero included, so a reader knows the screening looked: recall blocks and secrets first."""
    by_kind: Counter[str] = Counter()
    for key, count in cleaned.items():
        by_kind[key.split(":", 1)[0]] += count
    secrets = sum(redactions.values())
    parts = [f"{label} {by_kind.get(prefix, 0):,}" for prefix, label in STRIPPED
             if prefix == "stripped" or by_kind.get(prefix)]
    return [f"stripped: {', '.join(parts)}",
            f"secrets redacted: {secrets:,}" + (f" ({_counts(redactions)})" if secrets else "")]
SHOWN = {"kept": (KEEP, CONTEXT), "dropped": (DROP,), "all": (KEEP, CONTEXT, DROP)}


# Why a shown decision has no text: the message was dropped before any text was kept for it.
WHY_NO_TEXT = {"cron-session": "not screened: the whole session is a cron run",
               "dreaming-session": "not screened: the whole session is a memory dreaming run",
               "synthetic-prompt": "the whole message is a platform-written prompt, stripped by cleaning",
               "empty-after-clean": "nothing left once envelopes and injected blocks are stripped"}


def _why_no_text(decision: Decision) -> str | None:
    if decision.text.strip():
        return None
    return WHY_NO_TEXT.get(decision.reason, "no text left to show")


def _decision_json(decision: Decision) -> dict[str, object]:
    message = decision.message
    return {
        "why_no_text": _why_no_text(decision),
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
    shown = f"({_why_no_text(decision)})" if not text else text[:70] + ("…" if len(text) > 70 else "")
    return printable(
        f"{decision.decision:<7} {decision.reason:<18} {decision.message.role:<9} {decision.item_id:<12} {shown}"
    )


def _distill_summary(t: Tally) -> str:
    """Which extractor ran and what came of it: the part of a run summary about beliefs."""
    extractor = t.extractor + (f" ({t.model})" if t.model else "")
    lines = [f"extractor: {extractor}; {t.batches} batch(es), {t.requests} request(s), {t.candidates} candidate(s)"]
    if t.beliefs:
        lines.append(f"beliefs: {_counts(t.beliefs)}")
    if t.rejected:
        lines.append(f"rejected candidates: {_counts(t.rejected)}")
    if t.sanitized:
        lines.append(f"sanitized beliefs: {_counts(t.sanitized)}")
    if t.demoted:
        lines.append(f"context only: {_counts(t.demoted)}")
    if t.tokens or t.cost_usd:
        share = t.cached_share
        lines.append(f"model tokens: {t.tokens:,} (input {t.input_tokens:,}, cache write "
                     f"{t.cache_write_tokens:,}, cache read {t.cache_read_tokens:,}"
                     + (f": {share:.0%} of the prompt from the cache" if share is not None else "")
                     + f"), cost ${t.cost_usd:.4f}")
    if t.estimated_tokens:
        cached = t.estimated_cache_read_tokens / t.estimated_tokens
        lines.append(f"estimate: ≈{t.estimated_tokens:,} input tokens (≈{cached:.0%} read from the prompt cache), "
                     f"≈${t.estimated_cost_usd:.4f}")
    if t.overloaded:
        lines.append(f"the API pushed back {t.overloaded} time(s) (429/529): down to {t.concurrency_lowest} "
                     "request(s) at a time, each retried after the wait it asked for")
    if t.output_mode:
        lines.append(f"structured output: {t.output_mode}"
                     + (f" (stricter modes refused: {t.output_mode_note})" if t.output_mode_note else ""))
    if t.quarantined_requests:
        lines.append(f"quarantined requests: {t.quarantined_requests} (see `distill batches list`)")
    if t.submitted:
        lines.append(f"submitted to the Message Batches API: {', '.join(t.submitted)} (the next runs collect them)")
    if t.staged:
        lines.append("staged for an external agent:\n  " + "\n  ".join(t.staged))
    if t.resumed:
        lines.append(f"resumed batches: {t.resumed}")
    if t.budget_stop:
        lines.append(f"stopped: {t.budget_stop}")
    return "\n".join(lines)


def _run_summary(t: Tally, dry_run: bool) -> str:
    lines = [
        f"{'dry run: would read' if dry_run else 'read'} {t.files} file(s), {t.bytes_read:,} bytes, {t.lines:,} lines",
        f"messages: {t.messages:,}" + (f" ({_counts(t.roles)})" if t.roles else ""),
    ]
    lines += _counter_lines((("decisions", t.decisions), ("dropped", t.dropped)))
    lines += _stripped_lines(t.cleaned, t.redactions)
    lines += _counter_lines((("skipped lines", t.skipped), ("skipped files", t.files_skipped),
                             ("files", t.file_events)))
    lines.append(_distill_summary(t))
    return "\n".join(lines)


@examples("distill run                                   # the new tail of every transcript, once",
          "distill run --source ~/.openclaw/agents -v    # one source; name every file read or skipped",
          "distill run --dry-run --show dropped          # what would be dropped, and why; nothing recorded",
          "distill run --budget-usd 0.50 --show-beliefs  # stop before 50 cents; print what was learned")
@cli.command()
@source_option
@format_option
@click.option("--dry-run", is_flag=True, help="Read, screen and plan batches with token and cost estimates; record nothing.")
@click.option(
    "--show",
    type=click.Choice(sorted(SHOWN)),
    help="Print the decision on every newly read message (one JSON object each with --json); kept = keep + context.",
)
@run_options
@click.option("--no-llm", is_flag=True, help="Stage batches for an external agent (see `distill commit`).")
@click.option("--show-beliefs", is_flag=True,
              help="Print the statements learned by this run (also with -v); by default only their counts, so a "
              "scheduled run's log holds no belief text.")
@click.pass_obj
def run(obj: CliState, sources: tuple[Path, ...], source_format: str | None, dry_run: bool, show: str | None,
        options: RunOptions, no_llm: bool, show_beliefs: bool) -> None:
    """Read the new tail of every transcript, screen it, distill it into verified beliefs, commit exactly once."""
    out: Output = obj["out"]
    settings = options.applied(obj["settings"], extractor="external" if no_llm else options.extractor)
    settings = forced_sources(settings, sources, source_format)
    printer = None
    if show is not None:
        wanted = SHOWN[show]

        def printer(decision: Decision) -> None:
            if decision.decision in wanted:
                if out.as_json:
                    click.echo(orjson.dumps(_decision_json(decision)).decode())
                else:
                    click.echo(_decision_row(decision))

    summary = pipeline.run_once(settings, sources, dry_run=dry_run, show=printer,
                                progress=progress.on_stderr(out.as_json))
    human = _run_summary(summary.tally, dry_run)
    asked = show_beliefs or log.isEnabledFor(logging.INFO)
    if summary.run_id is not None and summary.tally.beliefs and not out.as_json and asked:
        learned = beliefs_api.from_run(settings, summary.run_id)
        human += "\nbeliefs from this run:\n" + "\n".join(
            f"  [{b.category}, {b.status}, {b.confidence:.2f}] {printable(b.statement)}"
            for b in learned[:LEARNED_SHOWN]
        ) + (f"\n  … and {len(learned) - LEARNED_SHOWN} more (`distill beliefs list`)"
             if len(learned) > LEARNED_SHOWN else "")
    if show is not None and out.as_json:
        click.echo(printable(human, newlines=True), err=True)
    else:
        out.emit(summary.as_dict(), human)
    missing = summary.tally.files_skipped.get("missing_source")
    if missing:
        raise DistillError(f"{missing} source(s) not found (named above); everything else was read")


@examples("distill run --no-llm                               # stage batches (paths printed)",
          "distill commit 0123456789ab-0001 --beliefs out.jsonl --dry-run   # verify only",
          "distill commit 0123456789ab-0001 --beliefs out.jsonl             # verify and store")
@cli.command()
@click.argument("batch_id")
@click.option("--beliefs", "beliefs_file", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="JSONL written by the external agent: one candidate per line, citing the batch's item ids.")
@click.option("--dry-run", is_flag=True, help="Verify every line and report; commit nothing.")
@click.option("--accept-empty", is_flag=True,
              help="Commit even when no line passes (the batch's messages are then marked read without a belief).")
@click.pass_obj
def commit(obj: CliState, batch_id: str, beliefs_file: Path, dry_run: bool, accept_empty: bool) -> None:
    """Verify and commit an external agent's beliefs for a batch staged by `distill run --no-llm`."""
    result = batches_admin.commit_external(obj["settings"], batch_id, beliefs_file, dry_run=dry_run,
                                           accept_empty=accept_empty)
    for verdict in result.lines:
        if verdict.reason is not None:
            click.echo(f"{beliefs_file}:{verdict.line}: rejected: {verdict.reason}", err=True)
    if result.tally is not None:
        human = f"committed {batch_id}\n" + _distill_summary(result.tally)
    else:
        human = (f"{'dry run: ' if dry_run else ''}{result.accepted} of {len(result.lines)} line(s) pass "
                 f"verification; {batch_id} stays staged")
    obj["out"].emit({**result.as_dict(), "dry_run": dry_run}, human)
    if not dry_run and not result.committed:
        why = result.refused or f"no line of {beliefs_file} passes verification"
        raise DistillError(f"{why}, so nothing would be stored and the batch's messages would be marked read: "
                           f"{batch_id} stays staged (fix the file, or pass --accept-empty to commit it anyway)")


@examples("distill batches list", "distill batches retry 0123456789ab-0001")
@cli.group()
def batches() -> None:
    """Batches waiting for a model, staged for an external agent, or quarantined after repeated refusals."""


@examples("distill batches list", "distill --json batches list | jq '.batches[].status'")
@batches.command("list")
@click.pass_obj
def batches_list(obj: CliState) -> None:
    """List pending, staged and quarantined batches."""
    found = batches_admin.list_batches(obj["settings"])
    human = "\n".join(
        f"{b.batch_id}  {b.status:<11} {b.requests} request(s), {b.items} item(s)"
        + (f"  {b.path}" if b.path else "") + (f"  error: {b.error}" if b.error else "")
        for b in found
    ) or "no batches"
    obj["out"].emit({"batches": [b.as_dict() for b in found]}, human)


@examples("distill batches list                      # find the quarantined batch",
          "distill batches retry 0123456789ab-0001     # send its failed requests again")
@batches.command("retry")
@click.argument("batch_id")
@extractor_option
@click.pass_obj
def batches_retry(obj: CliState, batch_id: str, extractor: str | None) -> None:
    """Extract a quarantined batch again and commit what now succeeds."""
    settings = override(obj["settings"], extractor=extractor)
    tally = batches_admin.retry(settings, batch_id, make_extractor(settings))
    obj["out"].emit({"batch_id": batch_id, **tally.as_dict()}, f"retried {batch_id}\n" + _distill_summary(tally))


@examples("distill batches discard 0123456789ab-0001         # its messages are read again",
          "distill batches discard 0123456789ab-0001 --yes   # also when it was paid for")
@batches.command("discard")
@click.argument("batch_id")
@click.option("--yes", "paid_too", is_flag=True,
              help="Discard a batch that was submitted or holds paid answers too (its messages are paid for again).")
@click.pass_obj
def batches_discard(obj: CliState, batch_id: str, paid_too: bool) -> None:
    """Unstage a staged batch (and later ones; their messages are read again) or give up on a quarantined one."""
    affected = batches_admin.discard(obj["settings"], batch_id, paid_too=paid_too)
    obj["out"].emit({"discarded": affected}, f"discarded: {', '.join(affected)}")


@examples("distill init                 # create the state dir and database",
          "distill init --from-now      # skip the history: only what is written from now on is read",
          "distill init --from-start    # reread everything from byte 0 (known messages are skipped)")
@cli.command()
@source_option
@click.option("--from-now", is_flag=True, help="Mark everything present as already read.")
@click.option("--from-start", is_flag=True, help="Forget all cursors: reread from byte 0.")
@click.pass_obj
def init(obj: CliState, sources: tuple[Path, ...], from_now: bool, from_start: bool) -> None:
    """Create the state directory and database (optionally setting where reading starts)."""
    if from_now and from_start:
        raise click.UsageError("--from-now and --from-start are opposites: pass one of them")
    mode = "from-now" if from_now else "from-start" if from_start else "create"
    summary = pipeline.init(obj["settings"], sources, mode=mode)
    human = f"state ready: {summary.db_path}"
    if summary.mode == "from-now":
        human += f"\nmarked {summary.files_marked} file(s) as read up to their last complete line"
    elif summary.mode == "from-start":
        human += f"\nforgot {summary.files_reset} cursor(s); the next run rereads from byte 0 (known messages are skipped)"
    obj["out"].emit(summary.as_dict(), human)


@examples("distill status", "distill --json status | jq .bytes_behind")
@cli.command()
@source_option
@click.pass_obj
def status(obj: CliState, sources: tuple[Path, ...]) -> None:
    """Tracked files, bytes not yet read, and the last run's counters."""
    report = pipeline.status(obj["settings"], sources)
    d = report.as_dict()
    d["beliefs"] = beliefs_api.counts(obj["settings"]).as_dict()
    waiting = batches_admin.list_batches(obj["settings"])
    d["batches"] = dict(Counter(b.status for b in waiting))
    d["quarantined"] = [b.as_dict() for b in waiting if b.status == "quarantined"]
    settings = obj["settings"]
    d["state_dir"], d["state_dir_origin"] = str(settings.state_dir), settings.origin("state_dir")
    d["db_exists"] = settings.db_path.exists()
    lines = [
        f"state dir: {d['state_dir']} ({d['state_dir_origin']})",
        f"database: {d['db']}" if d["db_exists"] else
        f"database: none yet at {d['db']} (`distill run` or `distill init` creates it; or is this the wrong state "
        f"dir? --state-dir, $DISTILL_STATE_DIR)",
        f"files tracked: {d['files_tracked']} (gone: {d['files_gone']}, untracked: {d['files_untracked']})",
        f"bytes behind: {d['bytes_behind']:,}",
        f"messages ingested: {d['messages_ingested']:,}",
        f"beliefs: {d['beliefs']['total']:,}" + (f" ({_counts(d['beliefs']['by_status'])})" if d["beliefs"]["total"] else ""),
    ]
    if d["batches"]:
        lines.append(f"batches waiting: {_counts(d['batches'])} (see `distill batches list`)")
    lines += [f"  quarantined {q['batch_id']}: {q['error']}" for q in d["quarantined"]]
    d["unreadable_batch_files"] = [b.path for b in waiting if b.status == "unreadable"]
    lines += [f"  unreadable batch file {path} (set aside; its messages are read again)"
              for path in d["unreadable_batch_files"]]
    last = d["last_run"]
    if last is None:
        lines.append("last run: never")
    else:
        lines.append(f"last run: {last['started_at']} {last['status']}, {last.get('messages', 0):,} messages")
        # A recorded run's counters, older runs' too: a counter they did not keep is missing.
        lines += [f"  {line}" for line in [
            *_counter_lines([("decisions", last.get("decisions") or {}), ("dropped", last.get("dropped") or {})]),
            *_stripped_lines(last.get("cleaned") or {}, last.get("redactions") or {}),
            *_counter_lines([("skipped lines", last.get("skipped") or {})])]]
        if last.get("error"):
            lines.append(f"  error: {last['error']}")
    obj["out"].emit(d, "\n".join(lines))


@examples("distill doctor                          # exit 1 when something is wrong",
          "distill doctor --source ~/elsewhere/agents")
@cli.command()
@source_option
@click.pass_obj
def doctor(obj: CliState, sources: tuple[Path, ...]) -> None:
    """Check everything an unattended run needs; each problem one line with its fix; exit 1 if any."""
    report = diagnose(obj["settings"], sources)
    marks = {"ok": "ok     ", "warning": "warning", "problem": "PROBLEM"}
    lines = [f"state dir: {report.state_dir} ({report.state_dir_origin})"]
    lines += [f"{marks[c.level]} {c.name}: {c.detail}" + (f" — fix: {c.fix}" if c.fix else "") for c in report.checks]
    obj["out"].emit(report.as_dict(), "\n".join(lines))
    if not report.healthy:
        raise DistillError(f"{sum(c.level == 'problem' for c in report.checks)} problem(s) found (see above)")


def _run_args(settings: Settings, sources: tuple[Path, ...], options: RunOptions) -> list[str]:
    """The run options as command-line words, sources made absolute (a unit has no working directory, and neither
    cron nor systemd passes on `$CODEX_HOME` and the like): without --source, the trees `distill run` would read
    now, `skip_formats` applied. A base URL from this shell's DISTILL_BASE_URL is written in too, for the same
    reason (one in distill.toml the unit reads itself)."""
    args = [word for source in pipeline.resolve_sources(sources, settings) for word in ("--source", source)]
    if options.base_url is None and settings.base_url and settings.origin("base_url").startswith("env"):
        options = replace(options, base_url=settings.base_url)
    return args + options.words()


@examples("distill schedule --every 1h --run-now          # in the foreground, until Ctrl-C",
          "distill schedule --cron '17 * * * *' --jitter 60",
          "distill schedule install systemd --every 1h   # or cron | launchd: a timer instead")
@cli.group(invoke_without_command=True)
@click.option("--cron", "cron_expr", metavar="EXPR", help="Five-field crontab expression, local time (0 = Sunday).")
@click.option("--every", help="Interval: 15m, 1h, 6h, 1d.  [default: 1h]")
@click.option("--jitter", type=click.IntRange(0, 3600), help="Random delay of up to S seconds per fire.")
@click.option("--run-now", is_flag=True, help="Run once at start, then on the schedule.")
@source_option
@run_options
@click.pass_context
def schedule(ctx: click.Context, cron_expr: str | None, every: str | None, jitter: int | None, run_now: bool,
             sources: tuple[Path, ...], options: RunOptions) -> None:
    """Run `distill run` in-process on a schedule until SIGTERM/SIGINT (then exit 0); one summary line per run.

    For hosts without cron or systemd. `schedule install` writes a systemd timer, crontab line or launchd agent
    instead."""
    if ctx.invoked_subcommand is not None:
        return
    obj: CliState = ctx.obj
    out = obj["out"]
    settings = options.applied(obj["settings"])
    from distiller import schedule as scheduling  # APScheduler costs ~30 ms to import: only this command needs it

    when = scheduling.timing(cron_expr, every, jitter)
    missing = [root for root in pipeline.resolve_sources(sources, settings) if not Path(root).exists()]
    if missing:
        raise DistillError(f"source not found: {', '.join(missing)}; every scheduled run would fail")
    check_options(settings, make_extractor(settings))  # refused now, not at every fire

    def report(outcome: scheduling.Outcome) -> None:
        if out.as_json:
            click.echo(orjson.dumps(outcome.as_dict(), option=orjson.OPT_SORT_KEYS).decode())
        elif not out.quiet:
            click.echo(printable(_outcome_line(outcome)))

    code = scheduling.serve(settings, sources or None, when, run_now=run_now, report=report)
    ctx.exit(code)


def _outcome_line(outcome: Outcome) -> str:
    if outcome.summary is None:
        return f"{outcome.at} {outcome.status}: {outcome.error}"
    d = outcome.summary
    beliefs = _counts(d["beliefs"]) or "none"
    return (f"{outcome.at} {outcome.status}: {d['files']} file(s), {d['messages']:,} message(s), beliefs: {beliefs}"
            f" (run {(d['run_id'] or '-')[:12]})" + (f"; stopped: {d['budget_stop']}" if d.get("budget_stop") else ""))


_KIND = click.argument("kind", type=click.Choice(install.KINDS))
_DIR = click.option("--dir", "target", type=click.Path(file_okay=False, path_type=Path),
                    help="Write the files here instead of their usual place.")


@examples("distill schedule install systemd                 # then the commands it prints",
          "distill schedule install cron --every 6h --source ~/.openclaw/agents",
          "distill schedule install launchd --dir /tmp/check    # write elsewhere to look first")
@schedule.command("install")
@_KIND
@click.option("--every", default="1h", help="Interval: 15m, 1h, 6h, 1d.")
@_DIR
@source_option
@run_options
@click.pass_obj
def schedule_install(obj: CliState, kind: str, every: str, target: Path | None, sources: tuple[Path, ...],
                     options: RunOptions) -> None:
    """Write a systemd user timer, crontab line or launchd agent running this distill on this state dir."""
    settings = options.applied(obj["settings"])  # checked now, not at the first fire
    args = _run_args(settings, sources, options)
    chosen = install.plan(kind, settings.state_dir, args, install.every_seconds(every), target, obj["config_file"])
    install.check_run(kind, settings, pipeline.resolve_sources(sources, settings))  # as the first fire would, before writing
    done = install.install(chosen, settings.state_dir)
    human = "\n".join([f"wrote {path}" for path in done.written] + ["enable it with:"]
                      + [f"  {step}" for step in done.next_steps])
    obj["out"].emit(done.as_dict(), human)


@examples("distill schedule uninstall systemd")
@schedule.command("uninstall")
@_KIND
@_DIR
@click.pass_obj
def schedule_uninstall(obj: CliState, kind: str, target: Path | None) -> None:
    """Remove what `schedule install` wrote, and print how to disable it first."""
    done = install.uninstall(install.plan(kind, obj["settings"].state_dir, [], 3600, target))
    human = "\n".join([f"removed {path}" for path in done.removed] or [f"no {kind} files installed"])
    human += "\ndisable it with:\n" + "\n".join(f"  {step}" for step in done.next_steps)
    obj["out"].emit(done.as_dict(), human)


@examples("distill path                                # every path, one per line",
          'duckdb "$(distill path database)"               # one path alone, for scripts',
          "distill --state-dir state --json path")
@cli.command("path")
@click.argument("which", required=False, type=click.Choice(["state_dir", "database", "config", "env_file"]))
@click.pass_obj
def path_command(obj: CliState, which: str | None) -> None:
    """Where distill keeps things: the state dir, the database, the settings file and the schedules' env file.

    With WHICH, only that path (nothing else on the line); they need not exist yet."""
    found = paths(obj["settings"], obj["config_file"])
    if which is not None:
        obj["out"].emit({which: found[which]}, found[which])
        return
    width = max(len(name) for name in found)
    obj["out"].emit(found, "\n".join(f"{name:<{width}}  {where}" for name, where in found.items()))


@examples("distill config show")
@cli.group("config")
def config_group() -> None:
    """The effective settings and where each came from."""


@examples("distill config show", "distill --json config show | jq '.settings[] | select(.name == \"model\")'")
@config_group.command("show")
@click.pass_obj
def config_show(obj: CliState) -> None:
    """Every setting's effective value and its origin (default, file, env, flag); secrets masked."""
    shown = describe(obj["settings"])
    width = max(len(s.name) for s in shown)
    human = "\n".join(f"{s.name:<{width}}  {_shown_value(s.value)}  ({s.origin})" for s in shown)
    obj["out"].emit({"settings": [asdict(s) for s in shown]}, human)


def _shown_value(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(value) or "[]"
    return str(value)


cli.add_command(beliefs)
cli.add_command(runs_command)
cli.add_command(reprocess_command)
cli.add_command(recall_command)
cli.add_command(profile_command)
cli.add_command(hook_group)


def main() -> None:
    """Entry point: errors become one clear line on stderr and an exit code, never a traceback."""
    cli.main(prog_name="distill")
