"""The run lock: one `distill run` at a time per state dir, compatible with flock(1) in cron."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from distiller.errors import Unavailable, os_fault


def lock_holder(fd: int) -> int | None:
    """The pid that holds the lock: the kernel's answer where there is one (Linux /proc/locks), else the pid the
    last distill wrote if that process is alive. A pid left by an earlier run while another tool (flock(1) in a
    cron line) holds the lock is never named."""
    st = os.fstat(fd)
    ident = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as locks:
            for line in locks:
                parts = line.split()
                if len(parts) > 5 and parts[1] == "FLOCK" and parts[5] == ident and parts[4].isdigit():
                    return int(parts[4])
        return None
    except OSError:
        pass
    written = os.pread(fd, 32, 0).decode(errors="replace").strip()
    if not written.isdigit():
        return None
    try:
        os.kill(int(written), 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return int(written)


def held(path: Path) -> bool:
    """Whether a process holds the run lock now (False when there is no lock file), asked without taking it: a
    run recorded `running` while nobody holds the lock has died (SIGKILL, power loss), and is reported so."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if lock_holder(fd) is not None:
            return True
        try:  # where the kernel cannot name the holder: a shared probe fails while a run holds it
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


@contextmanager
def run_lock(path: Path) -> Iterator[None]:
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise os_fault("take the run lock", path, exc) from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = lock_holder(fd)
            raise Unavailable(
                f"another distill run is in progress{f' (pid {holder})' if holder else ''}; lock held on {path}"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)
