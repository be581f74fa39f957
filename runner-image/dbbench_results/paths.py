"""Which paths the service accepts (pure): everything else is refused before
the file system is touched.

A run lives at ``<namespace>/<run>/<uid>/`` under the root. Inside it, every
segment is a plain name: no ``..``, no absolute paths, no hidden names (the
service's own temporary files start with a dot), no separators or NULs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

MAX_DEPTH = 10
_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_UID = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")


class PathRefusedError(ValueError):
    """The request names a path outside what a run may use."""


@dataclass(frozen=True)
class RunId:
    namespace: str
    name: str
    uid: str

    @classmethod
    def parse(cls, namespace: str, name: str, uid: str) -> RunId:
        if not _NAMESPACE.match(namespace):
            raise PathRefusedError(f"namespace {namespace!r} is not a Kubernetes namespace name")
        if not _NAME.match(name):
            raise PathRefusedError(f"run name {name!r} is not a Kubernetes object name")
        if not _UID.match(uid):
            raise PathRefusedError(f"uid {uid!r} is not a Kubernetes uid")
        return cls(namespace, name, uid)

    @property
    def prefix(self) -> PurePosixPath:
        return PurePosixPath(self.namespace, self.name, self.uid)


def relative(text: str) -> PurePosixPath:
    """A run-relative file path, or PathRefusedError saying why not."""
    if not text or text.startswith("/") or "\\" in text or "\x00" in text:
        raise PathRefusedError("paths are relative, with / separators and no NUL")
    segments = text.split("/")
    if len(segments) > MAX_DEPTH:
        raise PathRefusedError(f"paths are at most {MAX_DEPTH} segments deep")
    for segment in segments:
        if segment in ("", ".", ".."):
            raise PathRefusedError("empty, '.' and '..' path segments are refused")
        if not _SEGMENT.match(segment):
            raise PathRefusedError(
                f"segment {segment[:40]!r}: use letters, digits, '.', '_' and '-' "
                "(not starting with '.' or '-')"
            )
    return PurePosixPath(*segments)


def step_dir(target: str, phase: str, repeat: str) -> PurePosixPath:
    """``<target>/<phase>/<repeat>``: where one step's pods and merge live."""
    if not repeat.isdigit():
        raise PathRefusedError("repeat is a number")
    return relative(f"{target}/{phase}/{repeat}")
