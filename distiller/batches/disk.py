"""The two low-level writes batch files and journals share: every byte written, and the directory entry durable."""

from __future__ import annotations

import os
from pathlib import Path


def write_all(fd: int, data: bytes) -> None:
    """os.write may write less than asked (a full disk, a file size limit): loop until all is written."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(28, "No space left on device")
        view = view[written:]


def fsync_dir(directory: Path) -> None:
    """A new or renamed file survives a crash only once its directory is synced too."""
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
