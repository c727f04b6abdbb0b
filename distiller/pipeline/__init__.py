"""The library API of distilling: `run_once`, `init`, `status` (and `reprocess`, in its own module).

A run reads (`read.py`), collects chunks (`chunk.py`), dispatches each by mode (`dispatch.py`: dry run, synchronous,
Batches API, external) and commits each batch in one transaction (`commit.py`); `run.py` drives them, `state.py`
creates and reports the state, `reprocess.py` distills a history again with the same pieces.
"""

from distiller.pipeline.run import BudgetReached, RunSummary, resolve_sources, run_once
from distiller.pipeline.state import InitSummary, StatusReport, init, status

__all__ = ["BudgetReached", "InitSummary", "RunSummary", "StatusReport", "init", "resolve_sources", "run_once",
           "status"]
