"""The scan's own worker pool against concurrent.futures (not a test): a first run's scan, and a SIGKILLed run.

    python tests/bench/bench_scan_pool.py [--files 4000] [--workers N] [--repeat 3] [--work DIR]

Speed: many small sessions (tests/bench/corpus.py's many_small_sessions: the files a scan hands to workers) are
planned as a first run plans them, then scanned into a dry run's dispatcher (`distill_plans`, as `run --dry-run`
does) by: the main process alone; pipeline/scan.py's pool, forked and spawned; and a pool on
`concurrent.futures.ProcessPoolExecutor` (fork, forkserver, spawn) running the same task functions in the same
order, the main process scanning alongside it whenever the answer it needs next is not back (as scan.py does).
Each is timed from before its workers start to the last chunk dispatched (the best of --repeat, interleaved).

Kill: a child process takes the run lock (an flock, as `distill run` does), starts each pool, hands it a task
and is SIGKILLed; then: are its workers gone within 3 s, and is the lock free at once? A new run after a killed
one needs both.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import many_small_sessions

from distiller import sources as registry
from distiller.config import Settings
from distiller.events import Tally
from distiller.extract.select import estimator
from distiller.pipeline import scan
from distiller.pipeline.chunk import Chunk
from distiller.pipeline.dispatch import DryRun
from distiller.pipeline.run import distill_plans, unread
from distiller.store.db import Store
from distiller.track import ReadPlan, plan_reads


def _init(settings: Settings) -> None:
    scan._job[:] = [scan._Job(settings, None)]


def _scan_task(tasks: list[scan.FileTask]) -> list[scan.FileScan | None]:
    return scan.scan_files(tasks, scan._job[0], scan._packed)


class FuturesScanner(scan.InProcess):
    """scan.Scanner's schedule on a ProcessPoolExecutor: tasks of consecutive small files handed ahead, answers
    consumed in plan order, the main process scanning the next task itself while the one it needs is not done."""

    def __init__(self, settings: Settings, workers: int, context: str) -> None:
        self.job = scan._Job(settings, None)
        self.workers = workers
        self.pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(context),
                                        initializer=_init, initargs=(settings,))
        self.tasks: deque[tuple[list[int], Future[list[scan.FileScan | None]] | list[scan.FileScan | None]]] = deque()
        self.done: dict[int, scan.FileScan | None] = {}
        self.next_plan = 0

    def read(self, plans: list[ReadPlan], session_keys: dict[str, str]) -> None:
        self.plans, self.session_keys = plans, session_keys
        self.eligible = [scan._for_workers(plan) for plan in plans]

    _next_task = scan.Scanner._next_task

    def _hand_out(self) -> None:
        while (sum(isinstance(f, Future) for _, f in self.tasks) < scan.TASKS_AHEAD * self.workers
               and self.next_plan < len(self.plans)):
            indices, tasks = self._next_task()
            if indices:
                self.tasks.append((indices, self.pool.submit(_scan_task, tasks)))

    def _scan_next_here(self) -> bool:
        self._hand_out()
        indices, tasks = self._next_task(scan.TASK_BYTES_HERE)
        if not indices:
            return False
        self.tasks.append((indices, scan.scan_files(tasks, self.job, scan._kept)))
        return True

    def result(self, index: int) -> scan.FileScan | None:
        if index in self.done:
            return self.done.pop(index)
        if not self.eligible[index]:
            return None
        self.next_plan = max(self.next_plan, index)
        self._hand_out()
        while self.tasks and self.tasks[0][0][0] <= index:
            indices, answer = self.tasks[0]
            if isinstance(answer, Future) and not answer.done() and self._scan_next_here():
                continue
            self.tasks.popleft()
            self.done.update(zip(indices, answer.result() if isinstance(answer, Future) else answer, strict=True))
            self._hand_out()
        return self.done.pop(index, None)

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def scan_once(settings: Settings, root: Path, kind: str, workers: int) -> tuple[float, int]:
    discovery = registry.discover([root], settings.excluded_agents)
    plans, _ = plan_reads(discovery, [], [str(root)], settings.excluded_agents, Tally())
    tally = Tally(extractor="estimate")
    dispatcher = DryRun(settings, "dry-run", tally, estimator(settings))
    started = time.perf_counter()
    pool: scan.InProcess | None = None
    if kind.startswith("scan.py"):
        pool = scan.Scanner(settings, None, workers, fork=kind.endswith("fork"))
    elif kind.startswith("futures"):
        pool = FuturesScanner(settings, workers, kind.split()[-1])
    distill_plans(plans, discovery.session_keys, settings, tally, Chunk(settings), unread(Store.of(settings), tally),
                  dispatcher, started=pool)  # type: ignore[arg-type]
    return time.perf_counter() - started, tally.messages


# A child that holds the run lock, starts a pool, gives it work and prints the workers' pids; then it is killed.
KILLED = r"""
import fcntl, os, sys, time
sys.path.insert(0, sys.argv[3])
lock = open(sys.argv[2], "a+")
fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
kind = sys.argv[1]
from distiller.config import Settings
from distiller.pipeline import scan
settings = Settings(state_dir=sys.argv[4])
if kind.startswith("scan.py"):
    pool = scan.Scanner(settings, None, 1, fork=kind.endswith("fork"))
    pool.wait_started()
    pids = [w.pid for w in pool.workers]
else:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from bench_scan_pool import _init
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context(kind.split()[-1]), initializer=_init,
                               initargs=(settings,))
    pool.submit(time.sleep, 0).result()
    pids = list(pool._processes)
print(" ".join(map(str, pids)), flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def killed(kind: str, work: Path) -> dict[str, bool]:
    lock = work / "lock"
    child = subprocess.Popen([sys.executable, "-c", KILLED, kind, str(lock), str(Path(__file__).resolve().parent),
                              str(work / "state")], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    pids = [int(p) for p in child.stdout.readline().split()]
    child.send_signal(signal.SIGKILL)
    child.wait()
    with open(lock, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            lock_free = True
            fcntl.flock(f, fcntl.LOCK_UN)
        except OSError:
            lock_free = False
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and any(map(_alive, pids)):
        time.sleep(0.05)
    left = [pid for pid in pids if _alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return {"lock_free_at_once": lock_free, "workers_gone_within_3s": not left}


KINDS = ("main process", "scan.py fork", "scan.py spawn", "futures fork", "futures forkserver", "futures spawn")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=4000)
    parser.add_argument("--workers", type=int, default=max(1, len(os.sched_getaffinity(0)) - 1))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="distill-bench-pool-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        root = work / "agents"
        if not root.exists():
            many_small_sessions(root, args.files)
        size = sum(p.stat().st_size for p in root.rglob("*.jsonl"))
        settings = Settings(state_dir=work / "state", scan_workers=args.workers)
        times: dict[str, list[float]] = {kind: [] for kind in KINDS}
        messages = set()
        for _ in range(args.repeat):
            for kind in KINDS:
                seconds, n = scan_once(settings, root, kind, args.workers)
                times[kind].append(seconds)
                messages.add(n)
        assert len(messages) == 1, f"the scans differ: {messages}"
        results = {
            "corpus": {"files": args.files, "mb": round(size / 1e6, 1), "messages": messages.pop()},
            "workers": args.workers,
            "scan_s": {kind: round(min(t), 3) for kind, t in times.items()},
            "killed_run": {kind: killed(kind, work) for kind in KINDS[1:]},
        }
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
