"""The store's settings: near-duplicate thresholds, when a belief is active or faded, decay rates, how much each
further session adds, whether forgotten keys may return, and the scope rules."""

from __future__ import annotations

from dataclasses import dataclass

from distiller.errors import DistillError
from distiller.store.activation import DECAY_HIGH, DECAY_LOW, DECAY_MEDIUM


@dataclass(frozen=True, slots=True)
class ScopeRule:
    """The first rule whose globs match a belief's category and source agent sets its scope ("{agent}" expands)."""

    scope: str
    category: str = "*"
    agent: str = "*"


@dataclass(frozen=True, slots=True)
class StoreSettings:
    near_jaro_winkler: float = 0.88  # on the content words, in order
    near_jaccard: float = 0.6  # word-level, on the distinct content words
    active_confidence: float = 0.75  # explicit and at least this confident: active from the first mention
    activation_floor: float = -5.0  # ACT-R base level below which a belief is archived as faded
    decay_low: float = DECAY_LOW  # d in B = ln(Σ t^-d), t in hours, per decay sensitivity
    decay_medium: float = DECAY_MEDIUM
    decay_high: float = DECAY_HIGH
    independent_weight: float = 0.5  # how much each further session's confidence adds
    allow_newer_evidence: bool = False  # may a forgotten key return with evidence newer than its tombstone?
    scope_rules: tuple[ScopeRule, ...] = ()

    def __post_init__(self) -> None:
        for name in ("near_jaro_winkler", "near_jaccard"):
            if not 0 <= getattr(self, name) <= 1:
                raise DistillError(f"{name} must be between 0 and 1, not {getattr(self, name)}")
