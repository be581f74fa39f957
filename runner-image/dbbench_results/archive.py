"""A run's files as one gzip'd tar stream (`dbbench fetch`'s single request).

One request instead of one per file matters when the CLI goes through the
Kubernetes API server's service proxy: every request is a round trip through
it, and it rewrites the links of text/html answers (report.html would not
arrive byte for byte; an archive does). Each file is opened first and its size
taken from the open file, so a file replaced meanwhile (the service renames
new versions into place) is archived whole, old or new.
"""

from __future__ import annotations

import os
import tarfile
from collections.abc import Iterable
from io import BufferedIOBase
from pathlib import Path

ARCHIVE_TYPE = "application/gzip"


def run_files(run_dir: Path) -> list[str]:
    """The run's files, relative and sorted; hidden names (temporary files) left out."""
    names = (p.relative_to(run_dir) for p in run_dir.rglob("*") if p.is_file())
    return sorted(str(n) for n in names if not any(s.startswith(".") for s in n.parts))


def write_archive(run_dir: Path, names: Iterable[str], sink: BufferedIOBase) -> int:
    """Stream `names` (relative to `run_dir`) as tar.gz into `sink`; the count written."""
    written = 0
    with tarfile.open(fileobj=sink, mode="w|gz") as archive:
        for name in names:
            try:
                handle = (run_dir / name).open("rb")
            except FileNotFoundError:
                continue  # removed since it was listed
            with handle:
                stat = os.fstat(handle.fileno())
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.mode = stat.st_size, int(stat.st_mtime), 0o644
                archive.addfile(info, handle)
                written += 1
    return written
