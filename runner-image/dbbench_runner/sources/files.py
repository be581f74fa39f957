"""The files of a data source as streams of numbered rows.

Rows are numbered across the files in their listed order (a glob pattern
stands for its matches sorted by name), and runner connection w of W takes
rows w, w+W, w+2W, ...: every connection reads every file from the start
(gzip cannot be entered in the middle), keeps nothing but the current row,
and parses only its own rows in full (a CSV row is split by every reader:
a quoted value may span lines, so no reader can skip a row unsplit). Blank
lines are no rows.

Bad input raises SourceError naming the file (as the manifest names it,
relative to the claim), the line and what is wrong.
"""

from __future__ import annotations

import csv
import gzip
import io
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

from dbbench_contract.api.sources import DataSource


class SourceError(Exception):
    """A data source's bad input: a missing file, a row that does not parse, a key
    the database refused. The step fails with this message; nothing is reported."""

    def __init__(self, file: str, line: int | None, reason: str) -> None:
        self.file, self.line, self.reason = file, line, reason
        where = file if line is None else f"{file} line {line}"
        super().__init__(f"dataset.source: {where}: {reason}")


@dataclass(frozen=True)
class SourceFile:
    name: str  # relative to the claim's root, as the user sees it
    path: Path

    def open_text(self, source: DataSource) -> IO[str]:
        """The file as text (UTF-8), decompressed when it is gzip."""
        if source.compression_of(self.name) == "gzip":
            return io.TextIOWrapper(self.open_binary(source), encoding="utf-8", newline="")
        return self.path.open(encoding="utf-8", newline="")

    def open_binary(self, source: DataSource) -> IO[bytes]:
        if source.compression_of(self.name) == "gzip":
            return cast("IO[bytes]", gzip.open(self.path, "rb"))
        return self.path.open("rb")


def source_files(source: DataSource, root: Path) -> list[SourceFile]:
    """Every file of `source.files` under `root`, patterns expanded and sorted."""
    found: list[SourceFile] = []
    for entry in source.files:
        if any(c in entry for c in "*?["):
            matches = sorted(root.glob(entry))
            if not matches:
                raise SourceError(
                    entry, None, f"no file matches the pattern on the claim {source.claim_name}"
                )
            found.extend(SourceFile(str(p.relative_to(root)), p) for p in matches if p.is_file())
            continue
        path = root / entry
        if not path.is_file():
            raise SourceError(entry, None, f"no such file on the claim {source.claim_name}")
        found.append(SourceFile(entry, path))
    return found


@dataclass(frozen=True, slots=True)
class RawRow:
    """One row as read: CSV values (a list of str) or a JSON Lines line (bytes)."""

    file: str
    line: int
    values: list[str] | bytes


# Decompression and decoding failures, reported at the line being read.
_READ_ERRORS = (OSError, EOFError, zlib.error, UnicodeDecodeError, csv.Error)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text ({exc.reason} at byte {exc.start} of a block)"
    if isinstance(exc, EOFError):
        return "the gzip stream ends before its end marker (a truncated file)"
    if isinstance(exc, (gzip.BadGzipFile, zlib.error)):
        return f"not a valid gzip file ({exc}); set source.compression: none if it is plain"
    return f"cannot be read: {exc}"


def csv_rows(file: SourceFile, source: DataSource) -> Iterator[RawRow]:
    """The file's header (line 1), then each non-blank row with the line it starts on."""
    line = 0
    try:
        with file.open_text(source) as text:
            reader = csv.reader(text, delimiter=source.delimiter or ",", strict=True)
            for values in reader:
                start, line = line + 1, reader.line_num
                if values:
                    yield RawRow(file.name, start, values)
    except _READ_ERRORS as exc:
        raise SourceError(file.name, line + 1, _reason(exc)) from exc


def jsonl_rows(file: SourceFile, source: DataSource) -> Iterator[RawRow]:
    """Each non-blank line, undecoded: a reader skips the lines it does not own."""
    number = 0
    try:
        with file.open_binary(source) as lines:
            for number, text in enumerate(lines, start=1):
                if text.strip():
                    yield RawRow(file.name, number, text)
    except _READ_ERRORS as exc:
        raise SourceError(file.name, number + 1, _reason(exc)) from exc
