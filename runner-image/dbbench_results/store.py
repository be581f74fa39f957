"""The results root on disk: confined paths, atomic and durable writes.

A write goes to a hidden temporary file in the destination directory, is
fsync'ed, renamed over the destination and the directory fsync'ed, and only
then acknowledged: a reader sees the old file or the whole new one, never a
part, and an acknowledged file survives a crash or restart of the service.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Protocol

from dbbench_results.paths import PathRefusedError, RunId

CHUNK = 1 << 20


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class IncompleteUploadError(ValueError):
    pass


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs(path: Path, stop: Path) -> None:
    """mkdir -p, making each new directory entry durable (parents fsync'ed)."""
    missing: list[Path] = []
    current = path
    while not current.exists() and current != stop:
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            directory.mkdir()
        _fsync_dir(directory.parent)


def fsync_tree(directory: Path) -> None:
    """fsync every file and directory under `directory` (after a merge wrote it)."""
    for parent, _dirs, files in os.walk(directory):
        for name in files:
            fd = os.open(Path(parent, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(parent))


class Store:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def run_dir(self, run: RunId) -> Path:
        return self._confined(self.root / run.prefix)

    def path(self, run: RunId, relative: PurePosixPath) -> Path:
        return self._confined(self.run_dir(run) / relative)

    def _confined(self, path: Path) -> Path:
        # Segments are already plain names; resolving also defeats a symlink
        # someone might have planted on the volume.
        resolved = path.resolve()
        if resolved != self.root and not resolved.is_relative_to(self.root):
            raise PathRefusedError("path leaves the results root")
        return resolved

    def write(self, run: RunId, relative: PurePosixPath, body: Readable, length: int) -> int:
        """Store exactly `length` bytes read from `body`; returns the size written."""
        destination = self.path(run, relative)
        make_dirs(destination.parent, self.root)
        temp = destination.parent / f".upload-{secrets.token_hex(8)}"
        received = 0
        try:
            with temp.open("wb") as handle:
                while received < length:
                    chunk = body.read(min(CHUNK, length - received))
                    if not chunk:
                        raise IncompleteUploadError(
                            f"connection closed after {received} of {length} bytes"
                        )
                    handle.write(chunk)
                    received += len(chunk)
                handle.flush()
                os.fsync(handle.fileno())
            temp.replace(destination)
            _fsync_dir(destination.parent)
        finally:
            temp.unlink(missing_ok=True)
        return received

    def open(self, run: RunId, relative: PurePosixPath) -> BinaryIO | None:
        """The file, opened for reading in chunks (never read whole: files reach
        results.maxUploadMB and the service's memory limit is of that order)."""
        path = self.path(run, relative)
        if not path.is_file():
            return None
        try:
            return path.open("rb")
        except FileNotFoundError:  # replaced or removed meanwhile
            return None

    def size(self, run: RunId, relative: PurePosixPath) -> int:
        """The stored file's size, 0 when there is none."""
        try:
            return self.path(run, relative).stat().st_size
        except FileNotFoundError:
            return 0

    def runs(self) -> Iterator[tuple[str, str, str]]:
        """(namespace, name, uid) of every run with results, for listings."""
        for ns in sorted(p for p in self.root.iterdir() if p.is_dir()):
            for name in sorted(p for p in ns.iterdir() if p.is_dir()):
                for uid in sorted(p for p in name.iterdir() if p.is_dir()):
                    yield ns.name, name.name, uid.name
