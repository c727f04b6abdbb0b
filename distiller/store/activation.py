"""ACT-R activation over a belief's evidence times, in SQL: how present a belief is in the user's conversations.

Apart from the write path (writes.py) so that a reader — recall, and the agents' hooks, which must answer within
150 ms process start included — need not import it (the write path and the secret rules it guards with cost
about 50 ms to import).
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from distiller.store import clock

# d in B = ln(Σ t^-d), t in hours, per decay sensitivity (StoreSettings may set others)
DECAY_LOW, DECAY_MEDIUM, DECAY_HIGH = 0.3, 0.5, 0.8

# The age of evidence is measured on its scope's transcript clock (store/clock.py, joined as k); $now only stands
# in for a scope whose clock is not known yet (beliefs stored without their messages, as in an import).
DECAY_TERM = (
    "pow(greatest(epoch(coalesce(k.at, $now) - e.ts) / 3600.0, 1.0), -CASE {decay} "
    "WHEN 'low' THEN $decay_low WHEN 'high' THEN $decay_high ELSE $decay_medium END)"
)
ACTIVATION_SQL = f"ln(sum({DECAY_TERM.format(decay='b.decay_sensitivity')}))"


class Decay(Protocol):
    """The decay rates (StoreSettings has them), read only."""

    @property
    def decay_low(self) -> float: ...
    @property
    def decay_medium(self) -> float: ...
    @property
    def decay_high(self) -> float: ...


def activation_params(settings: Decay | None, now: datetime) -> dict[str, datetime | float]:
    """The parameters activation_sql() reads; None: the default decay rates."""
    if settings is None:
        return {"now": now, "decay_low": DECAY_LOW, "decay_medium": DECAY_MEDIUM, "decay_high": DECAY_HIGH}
    return {"now": now, "decay_low": settings.decay_low, "decay_medium": settings.decay_medium,
            "decay_high": settings.decay_high}


def activation_sql() -> str:
    """ACT-R base-level learning over a belief's evidence times (aliases: evidence e, beliefs b, and the clock k of
    `clock_join()`)."""
    return ACTIVATION_SQL


def clock_join() -> str:
    """The join activation_sql() needs after `evidence e JOIN beliefs b`."""
    return clock.join("b.scope")
