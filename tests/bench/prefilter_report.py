"""Print how the prefilter treats the labelled fixture: keep-rate of fact turns, drop-rate of non-fact turns, and
which reasons decided them. Run: PYTHONPATH=. python tests/bench/prefilter_report.py [fixture.jsonl]"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from distiller.screen.clean import clean as clean_as
from distiller.screen.prefilter import KEEP, prefilter
from distiller.sources.openclaw.envelopes import CLEANING


def clean(text, role, extra_blocks=()):
    return clean_as(text, role, extra_blocks, CLEANING)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "labelled.jsonl"


def message_outcome(line: dict) -> tuple[bool, str]:
    """Whether any part of the message is kept, and the reason that decided it."""
    message = line["message"]
    text = "\n".join(block["text"] for block in message["content"] if block.get("type") == "text")
    cleaned = clean(text, message["role"])
    if cleaned.drop_reason:
        return False, cleaned.drop_reason
    verdicts = [prefilter(part, message["role"]) for part in cleaned.parts]
    kept = [verdict for verdict in verdicts if verdict.decision == KEEP]
    return bool(kept), (kept or verdicts)[0].reason


def main(path: Path) -> None:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    labelled = [row for row in rows if row["fact"] is not None]
    by_reason: Counter[tuple[str, bool, bool]] = Counter()
    kept_facts = dropped_noise = facts = noise = 0
    for row in labelled:
        kept, reason = message_outcome(row["line"])
        by_reason[(reason, row["fact"], kept)] += 1
        if row["fact"]:
            facts += 1
            kept_facts += kept
        else:
            noise += 1
            dropped_noise += not kept
    kept_total = kept_facts + (noise - dropped_noise)
    print(f"rows: {len(rows)}  labelled user turns: {len(labelled)}  (fact {facts}, non-fact {noise})")
    print(f"keep-rate of fact turns:     {kept_facts}/{facts} = {kept_facts / facts:.1%}   (target >= 97%)")
    print(f"drop-rate of non-fact turns: {dropped_noise}/{noise} = {dropped_noise / noise:.1%}   (target >= 54%)")
    print(f"precision of kept turns:     {kept_facts}/{kept_total} = {kept_facts / kept_total:.1%}")
    print()
    print(f"{'reason':<20} {'fact kept':>10} {'fact dropped':>13} {'non-fact kept':>14} {'non-fact dropped':>17}")
    for reason in sorted({reason for reason, _, _ in by_reason}):
        counts = [by_reason[(reason, fact, kept)] for fact, kept in ((True, True), (True, False), (False, True), (False, False))]
        print(f"{reason:<20} {counts[0]:>10} {counts[1]:>13} {counts[2]:>14} {counts[3]:>17}")
    missed = [row["id"] for row in labelled if row["fact"] and not message_outcome(row["line"])[0]]
    if missed:
        print("\nfact turns dropped:", ", ".join(missed))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURE)
