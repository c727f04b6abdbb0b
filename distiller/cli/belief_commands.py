"""`distill beliefs …` and `distill runs`: thin click commands over distiller.manage."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

from distiller import manage as api
from distiller.cli.context import CliState
from distiller.cli.examples import examples
from distiller.errors import DistillError
from distiller.events import cached_share
from distiller.extract.base import CATEGORIES
from distiller.store.lifecycle import STATUSES
from distiller.store.reads import SORTS, BeliefRow, Filters
from distiller.terminal import printable


def _since(value: str | None) -> datetime | None:
    """An ISO date/time, or a span back from now: 7d, 12h, 30m."""
    if not value:
        return None
    units = {"d": "days", "h": "hours", "m": "minutes", "w": "weeks"}
    if value[-1:] in units and value[:-1].isdigit():
        return datetime.now(UTC) - timedelta(**{units[value[-1]]: int(value[:-1])})
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"expected an ISO date or a span like 7d: {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _file_mode(value: str) -> int:
    try:
        mode = int(value, 8)
    except ValueError:
        mode = -1
    if not 0 <= mode <= 0o777:
        raise click.BadParameter(f"expected octal permissions like 600 or 640, not {value!r}")
    return mode


COLUMNS = ("id", "status", "category", "conf", "act", "scope", "statement")
LEGEND = ("conf: confidence, 0-1 · act: activation (ACT-R: how recent and how often its evidence is; higher is "
          "recalled first; 0.00 is one mention within the hour, each 1.00 less about 2.7 times weaker)")


def _table(rows: list[BeliefRow]) -> str:
    """One header row and aligned columns, whatever the widths of agent names; numbers with two decimals."""
    cells = [(b.id, b.status, b.category, f"{b.confidence:.2f}", "-" if b.activation is None else f"{b.activation:.2f}",
              printable(b.scope), printable(b.statement)) for b in rows]
    widths = [max(len(COLUMNS[i]), *(len(row[i]) for row in cells)) for i in range(len(COLUMNS) - 1)]
    numeric = {3, 4}

    def line(row: Sequence[str]) -> str:  # the last column, the statement, is not padded
        return "  ".join([(cell.rjust(width) if i in numeric else cell.ljust(width))
                          for i, (cell, width) in enumerate(zip(row[:-1], widths, strict=True))] + [row[-1]])

    return "\n".join([line([name.upper() for name in COLUMNS]),
                      *(line(row) for row in cells), LEGEND])


def _rows(obj: CliState, rows: list[BeliefRow], filters: Filters) -> None:
    out = obj["out"]
    if not obj["settings"].db_path.exists():
        click.echo(api.no_database(obj["settings"]), err=True)
    hidden = api.hidden_archived(obj["settings"], filters)
    total = api.count_beliefs(obj["settings"], filters) if len(rows) == filters.limit else len(rows)
    if total > len(rows) and not out.quiet:
        click.echo(f"showing {len(rows)} of {total:,} beliefs: {total - len(rows):,} more with --limit "
                   f"{total} (or --limit 0 for all)", err=True)
    if hidden and not out.quiet:
        click.echo(f"{hidden} archived match(es) not shown: --status all", err=True)
    out.emit({"beliefs": [asdict(b) for b in rows], "archived_hidden": hidden, "total": total,
              "truncated": total > len(rows)},
             _table(rows) if rows else "no beliefs")


@examples("distill beliefs list", 'distill beliefs search "lisbon"', "distill beliefs show b1:4f2a")
@click.group()
def beliefs() -> None:
    """List, search, inspect, forget, export and import the distilled beliefs."""


_STATUS_CHOICES = click.Choice([*STATUSES, "all"])


@examples("distill beliefs list                              # the strongest 50",
          "distill beliefs list --learned-since 1d --limit 0  # everything learned today",
          "distill beliefs list --category preference --sort recent",
          "distill --json beliefs list --status all | jq '.beliefs[].statement'")
@beliefs.command("list")
@click.option("--category", type=click.Choice(CATEGORIES))
@click.option("--status", type=_STATUS_CHOICES, help="Default: every status but archived.")
@click.option("--scope", help="global or agent:<id>.")
@click.option("--agent", help="Only beliefs with evidence from this agent.")
@click.option("--since", help="Last seen in a transcript since an ISO date/time or a span back (7d, 12h).")
@click.option("--learned-since", help="Learned by the store since an ISO date/time or a span back (7d, 12h).")
@click.option("--limit", type=click.IntRange(min=0), default=50, help="At most this many (0: all).")
@click.option("--sort", type=click.Choice(sorted(SORTS)), default="activation")
@click.pass_obj
def list_command(obj: CliState, category: str | None, status: str | None, scope: str | None, agent: str | None,
                 since: str | None, learned_since: str | None, limit: int, sort: str) -> None:
    """Beliefs, strongest first (ACT-R activation, confidence or most recent)."""
    filters = Filters(category, status, scope, agent, _since(since), None, limit or None, sort, _since(learned_since))
    _rows(obj, api.list_beliefs(obj["settings"], filters), filters)


@examples('distill beliefs search "lisbon"', 'distill beliefs search "dark mode" --status all')
@beliefs.command()
@click.argument("text")
@click.option("--status", type=_STATUS_CHOICES, help="Default: every status but archived.")
@click.option("--learned-since", help="Learned by the store since an ISO date/time or a span back (7d, 12h).")
@click.option("--limit", type=click.IntRange(min=0), default=50, help="At most this many (0: all).")
@click.pass_obj
def search(obj: CliState, text: str, status: str | None, learned_since: str | None, limit: int) -> None:
    """Beliefs whose statement, subject or attribute contains every word of TEXT."""
    filters = Filters(status=status, text=text, limit=limit or None, learned_since=_since(learned_since))
    _rows(obj, api.list_beliefs(obj["settings"], filters), filters)


@examples("distill beliefs show b1:4f2a        # an id prefix is enough")
@beliefs.command()
@click.argument("belief_id")
@click.pass_obj
def show(obj: CliState, belief_id: str) -> None:
    """One belief: statement, scores and every evidence item with its provenance."""
    detail = api.show(obj["settings"], belief_id)
    b = detail.belief
    lines = [
        f"{b.id}  {printable(b.statement)}",
        f"  {b.category} · {b.status} · {b.scope} · slot {b.subject}/{b.attribute or '-'}",
        (f"  confidence {b.confidence:.2f} ({b.evidence_type}) · activation "
         f"{'-' if b.activation is None else f'{b.activation:.2f}'} · importance {b.importance} · "
         f"decay {b.decay_sensitivity}"),
        f"  {b.evidence_count} evidence item(s) from {b.sessions} session(s), {b.first_seen} → {b.last_seen}; "
        f"valid from {b.valid_from or '-'}" + (f" to {b.valid_to}" if b.valid_to else ""),
    ]
    for name in ("superseded_by", "supersedes", "conflicts_with"):
        if getattr(b, name):
            lines.append(f"  {name.replace('_', ' ')} {getattr(b, name)}")
    for e in detail.evidence:
        lines.append(f"  - {e.ts} {e.agent}/{e.session} message {e.message_id} ({e.evidence_type}, run {e.run[:12]})")
        lines.append(f"    {e.file} bytes {e.byte_start}-{e.byte_end}")
        lines.append(f"    “{printable(e.quote)}”")
    obj["out"].emit(detail.as_dict(), "\n".join(lines))


@examples("distill beliefs history b1:4f2a     # what it superseded, and what superseded it")
@beliefs.command()
@click.argument("belief_id")
@click.pass_obj
def history(obj: CliState, belief_id: str) -> None:
    """The belief's slot over time: what it superseded, what superseded it, and lifecycle events."""
    result = api.history(obj["settings"], belief_id)
    lines = [f"{b.valid_from or b.first_seen} → {b.valid_to or 'now':<25} {b.status:<18} {b.id}  "
             f"{printable(b.statement)}"
             for b in result.timeline]
    lines += [f"  {e.at} {e.event:<16} {e.belief_id}" + (f" ↔ {e.other_id}" if e.other_id else "")
              for e in result.events]
    obj["out"].emit(result.as_dict(), "\n".join(lines))


BULK_IDS = 3  # forgetting more ids than this at once is a bulk forget
FORGET_SHOWN = 20  # statements listed in a forget's prompt and report; the rest are counted


def _forgotten_lines(result: api.Forgetting) -> list[str]:
    ids, statements = result.forgotten.beliefs, result.statements
    lines = [f"  {belief_id}  {printable(statement)}" for belief_id, statement in
             zip(ids[:FORGET_SHOWN], statements[:FORGET_SHOWN], strict=True)]
    if len(ids) > FORGET_SHOWN:
        lines.append(f"  … and {len(ids) - FORGET_SHOWN} more (--json lists them all)")
    return lines


@examples('distill beliefs forget --match "old address" --dry-run   # what would go, statement by statement',
          'distill beliefs forget --match "old address"             # asks on a terminal',
          "distill beliefs forget b1:4f2a                           # one belief, by id",
          "distill beliefs forget --source ~/.openclaw/agents/main/sessions/abc.jsonl --yes")
@beliefs.command()
@click.argument("belief_ids", nargs=-1)
@click.option("--match", help="Forget every belief whose text contains every word of this.")
@click.option("--source", help="A transcript file or session id: forget its evidence and beliefs left without any.")
@click.option("--dry-run", is_flag=True, help="Report what would be forgotten; change nothing.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation of a bulk forget on a terminal.")
@click.pass_obj
def forget(obj: CliState, belief_ids: tuple[str, ...], match: str | None, source: str | None, dry_run: bool,
           yes: bool) -> None:
    """Delete beliefs and leave tombstones, so no replay or reprocess brings them back.

    A bulk forget (--match, --source, more than three ids) shows the statements and asks first on a terminal; with
    stdin not a terminal (a script, a pipe) it forgets nothing unless --yes."""
    bulk = bool(match or source or len(belief_ids) > BULK_IDS)
    if bulk and not dry_run and not yes:
        preview = api.forget(obj["settings"], belief_ids, match=match, source=source, dry_run=True)
        if not preview.forgotten.beliefs and not preview.forgotten.evidence:
            obj["out"].emit({**preview.as_dict(), "dry_run": False}, "nothing to forget")
            return
        what = f"{len(preview.forgotten.beliefs)} belief(s) and {preview.forgotten.evidence} evidence item(s)"
        if not sys.stdin.isatty():
            raise DistillError(f"stdin is not a terminal, so nobody can confirm forgetting {what}: nothing "
                               f"forgotten; pass --yes (see what would go with --dry-run)")
        click.echo("\n".join([f"would forget {what}:", *_forgotten_lines(preview)]), err=True)
        if not click.confirm(f"forget {what} for good?", err=True):
            raise DistillError("not confirmed: nothing forgotten")
    result = api.forget(obj["settings"], belief_ids, match=match, source=source, dry_run=dry_run)
    done = result.forgotten
    verb = "would forget" if dry_run else "forgot"
    human = f"{verb} {len(done.beliefs)} belief(s), {done.evidence} evidence item(s)"
    if not dry_run:
        human += f"; {done.tombstones} tombstone(s) written"
    obj["out"].emit({**result.as_dict(), "dry_run": dry_run}, "\n".join([human, *_forgotten_lines(result)]))


@examples("distill beliefs export -o beliefs.jsonl                 # everything, tombstones too",
          "distill beliefs export --format markdown -o MEMORY.md",
          "distill beliefs export --format csv --status active -o active.csv --mode 640")
@beliefs.command()
@click.option("--format", "fmt", type=click.Choice(api.FORMATS), default="jsonl")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="File (default: stdout).")
@click.option("--status", "statuses", multiple=True, type=click.Choice(STATUSES),
              help="Only these statuses (repeatable). Default: all; markdown: active and provisional.")
@click.option("--mode", default="600", callback=lambda _c, _p, v: _file_mode(v),
              help="Permissions of the --output file, in octal (e.g. 640 to share it with your group).")
@click.pass_obj
def export(obj: CliState, fmt: str, output: Path | None, statuses: tuple[str, ...], mode: int) -> None:
    """Export beliefs with their evidence as JSONL, CSV, Parquet or MEMORY.md-style markdown."""
    summary, data = api.export(obj["settings"], fmt, output, statuses or None, mode=mode)
    if summary.path is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        obj["out"].emit(asdict(summary), f"exported {summary.beliefs} belief(s) to {summary.path}")


@examples("distill --state-dir /elsewhere beliefs import beliefs.jsonl")
@beliefs.command("import")
@click.argument("file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.pass_obj
def import_command(obj: CliState, file: Path) -> None:
    """Import a JSONL export (idempotent; forgotten beliefs stay forgotten)."""
    result = api.import_file(obj["settings"], file)
    d = result.as_dict()
    obj["out"].emit(d, ", ".join(f"{k} {v}" for k, v in d.items() if v) or "nothing to import")


def _money(value: object) -> str:
    """A recorded cost: older runs kept none."""
    return f"${value:.4f}" if isinstance(value, int | float) else "-"


@examples("distill runs", "distill runs --limit 5", "distill --json runs | jq '.runs[0].status'")
@click.command("runs")
@click.option("--limit", type=click.IntRange(min=1), default=20)
@click.pass_obj
def runs_command(obj: CliState, limit: int) -> None:
    """Recent runs with their counters, tokens and cost."""
    records = api.recent_runs(obj["settings"], limit)
    payload = {"runs": [{**asdict(r), "cached_share": cached_share(r.counters)} for r in records]}
    lines = []
    for r in records:
        c = r.counters
        share = cached_share(c)
        tokens = c.get("tokens")
        tokens_text = "-" if tokens is None else (f"{sum(tokens.values()):,}" if isinstance(tokens, dict)
                                                  else f"{tokens:,}")
        beliefs_counted = c.get("beliefs")
        beliefs_text = (", ".join(f"{k} {v}" for k, v in beliefs_counted.items() if v)
                        if isinstance(beliefs_counted, dict) else "-")
        lines.append(f"{r.started_at}  {r.run_id[:12]}  {r.status:<11} messages {c.get('messages', 0):>6,}  "
                     f"tokens {tokens_text:>9}  cached {'-' if share is None else f'{share:.0%}':>4}  "
                     f"cost {_money(c.get('cost_usd')):>9}  beliefs: {beliefs_text or '-'}"
                     + (f"  error: {r.error}" if r.error else ""))
    obj["out"].emit(payload, "\n".join(lines) or "no runs yet")
