"""The library API of distilling: `run_once`, `init`, `status` (and `reprocess`, in its own module).

A run reads (`read.py`), collects chunks (`chunk.py`), dispatches each by mode (`dispatch.py`: dry run, synchronous,
Batches API, external) and commits each batch in one transaction (`commit.py`); `run.py` drives them, `state.py`
creates and reports the state, `reprocess.py` distills a history again with the same pieces; `scan.py` spreads a
big scan over worker processes.

The names below are imported on first use: a scan worker imports only the reader and screening, not the store and
the extractors.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from distiller.pipeline.run import BudgetReached, RunSummary, resolve_sources, run_once
    from distiller.pipeline.state import InitSummary, StatusReport, init, status

_HOMES = {"BudgetReached": "run", "RunSummary": "run", "resolve_sources": "run", "run_once": "run",
          "InitSummary": "state", "StatusReport": "state", "init": "state", "status": "state"}
__all__ = ["BudgetReached", "InitSummary", "RunSummary", "StatusReport", "init", "resolve_sources",
           "run_once", "status"]  # _HOMES's keys, written out so that linters and type checkers can read them


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
