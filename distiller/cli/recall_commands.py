"""`distill recall`, `distill profile` and `distill hook …`: thin click commands over distiller.recall."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from distiller.cli.context import CliState
from distiller.cli.examples import examples
from distiller.cli.extractor_options import base_url_option, extractor_option, model_option
from distiller.config import override
from distiller.recall import FORMATS, api, write_if_changed
from distiller.recall.lines import Limits


@examples('distill recall "where should we eat tonight?"      # the block for a prompt, on stdout',
          "distill recall --agent main --write ~/agent/MEMORY-RECALL.md  # a file an agent reads, rewritten on change",
          "distill --json recall lisbon | jq '.lines[].belief_id'   # audit what it would inject")
@click.command("recall")
@click.argument("prompt", required=False, default="")
@click.option("--agent", help="Beliefs of this agent and global ones (default: every scope).")
@click.option("--max-chars", type=click.IntRange(min=0), default=2200, help="Cut the block at a line boundary.")
@click.option("--limit-core", type=click.IntRange(min=0), default=10)
@click.option("--limit-active", type=click.IntRange(min=0), default=5)
@click.option("--limit-recalled", type=click.IntRange(min=0), default=5)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="block")
@click.option("--with-profile", is_flag=True, help="Put the profile (see `distill profile`) at the top.")
@click.option("--write", "write_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the block to this file (atomically, only when it changed) instead of stdout.")
@click.pass_obj
def recall_command(obj: CliState, prompt: str, agent: str | None, max_chars: int, limit_core: int, limit_active: int,
                   limit_recalled: int, fmt: str, with_profile: bool, write_path: Path | None) -> None:
    """The beliefs to hand an agent, as a <bee-recall> block: core, active (recent) and recalled (matching PROMPT).

    \b
    Example:
      distill recall "what should I cook tonight?" --agent main --max-chars 1500
      distill recall --write ~/.config/agent/MEMORY.md --format markdown
    """
    settings = obj["settings"]
    limits = Limits(limit_core, limit_active, limit_recalled)
    rendered = api.recall(settings.db_path, prompt, agent=agent, limits=limits, max_chars=max_chars,
                          fmt="markdown" if fmt == "json" else fmt, with_profile=with_profile,
                          wait_seconds=settings.db_wait_seconds,
                          model=settings)
    payload = rendered.as_dict()
    if write_path is not None:
        try:
            payload["written"] = write_if_changed(write_path, rendered.text)
        except OSError as exc:
            raise click.ClickException(f"cannot write {write_path}: {exc.strerror or exc}") from None
        payload["path"] = str(write_path)
        human = f"{'wrote' if payload['written'] else 'unchanged'}: {write_path} ({len(rendered.lines)} line(s))"
    else:
        human = rendered.text.rstrip("\n") or "nothing to recall"
    if rendered.cut and not obj["out"].quiet:
        click.echo(f"{rendered.cut} line(s) left out to stay within --max-chars {max_chars}", err=True)
    if fmt == "json" and not obj["out"].as_json:
        obj["out"].as_json = True
    obj["out"].emit(payload, human)


@examples("distill profile                # two or three sentences, cached until the beliefs change",
          "distill profile --refresh --extractor rules",
          "distill profile --extractor openai-compatible --base-url http://localhost:11434/v1 --model qwen2.5:7b")
@click.command("profile")
@click.option("--agent", help="Beliefs of this agent and global ones (default: every scope).")
@click.option("--refresh", is_flag=True, help="Compose it again even if the beliefs under it did not change.")
@extractor_option
@model_option
@base_url_option
@click.pass_obj
def profile_command(obj: CliState, agent: str | None, refresh: bool, extractor: str | None, model: str | None,
                    base_url: str | None) -> None:
    """Two or three sentences about the user from the active, confident beliefs; cached until they change.

    Written by the extractor `run` would use when it calls a model (Anthropic, or an OpenAI-compatible server)
    and verified sentence by sentence; by the rules' template otherwise.

    \b
    Example:
      distill profile
      distill profile --refresh --json
      distill profile --extractor rules
    """
    settings = override(obj["settings"], extractor=extractor, model=model, base_url=base_url)
    made = api.user_profile(settings.db_path, agent=agent, refresh=refresh, wait_seconds=settings.db_wait_seconds,
                            model=settings)
    if made.note and not obj["out"].quiet:
        click.echo(f"profile: {made.note}", err=True)
    obj["out"].emit(made.as_dict(), made.text or "no active, confident beliefs yet: nothing to profile")


_AGENTS = click.Choice(["claude-code"])


@examples("distill hook install claude-code     # add the recall hook to Claude Code's settings",
          "distill hook uninstall claude-code")
@click.group("hook")
def hook_group() -> None:
    """Recall for agents' hooks: answer one (`distill hook claude-code`), install or uninstall it.

    \b
    Example:
      distill hook install claude-code
      echo '{"prompt": "what do I like?"}' | distill hook claude-code
    """


@examples("distill hook claude-code < event.json   # what Claude Code would receive for that UserPromptSubmit event")
@hook_group.command("claude-code")
@click.option("--agent", help="Beliefs of this agent and global ones (default: every scope).")
@click.option("--max-chars", type=int, default=2200)
@click.pass_obj
def hook_claude_code(obj: CliState, agent: str | None, max_chars: int) -> None:
    """Read Claude Code's UserPromptSubmit event on stdin and print the recall block as additional context.

    Never fails the prompt: on any error it prints nothing, exits 0 and logs one line to <state-dir>/hook.log.

    \b
    Example:
      echo '{"prompt": "where do I live?"}' | distill hook claude-code
    """
    from distiller.recall import hook

    out = hook.answer(sys.stdin.buffer.read(hook.MAX_EVENT_BYTES), obj["settings"].state_dir, agent=agent,
                      max_chars=max(max_chars, 0))
    if out:
        click.echo(out.decode())


@examples("distill hook install claude-code", "distill hook install claude-code --agent main --max-chars 1500")
@hook_group.command("install")
@click.argument("kind", type=_AGENTS)
@click.option("--agent", help="Recall the beliefs of this agent and global ones (default: every scope).")
@click.option("--max-chars", type=click.IntRange(min=0), default=2200)
@click.pass_obj
def hook_install(obj: CliState, kind: str, agent: str | None, max_chars: int) -> None:
    """Add the hook to Claude Code's user settings ($CLAUDE_CONFIG_DIR or ~/.claude), keeping every other hook.

    \b
    Example:
      distill hook install claude-code --agent main
    """
    from distiller.recall import claude_settings

    done = claude_settings.install(obj["settings"].state_dir, agent=agent, max_chars=max_chars)
    human = (f"{'installed' if done.changed else 'already installed'} in {done.path}: {done.command}"
             + (f" (replaced {done.removed} earlier entry)" if done.removed and done.changed else ""))
    obj["out"].emit(done.as_dict(), human)


@examples("distill hook uninstall claude-code")
@hook_group.command("uninstall")
@click.argument("kind", type=_AGENTS)
@click.pass_obj
def hook_uninstall(obj: CliState, kind: str) -> None:
    """Remove the hook from Claude Code's user settings, and nothing else.

    \b
    Example:
      distill hook uninstall claude-code
    """
    from distiller.recall import claude_settings

    done = claude_settings.uninstall()
    obj["out"].emit(done.as_dict(), f"removed from {done.path}" if done.changed else f"not installed in {done.path}")
