"""make scale with SCALE_PROFILE=<dir>: a sampling profile of the operator process.

Put on the operator's PYTHONPATH by `operating.start_operator` (never in the
chart's image). A thread samples every thread's stack every
SCALE_PROFILE_INTERVAL seconds (default 0.02; a deterministic profiler would
slow every call and skew the CPU figures) and rewrites, every 20 s,
<dir>/cpu.txt: functions by the share of samples in which they are on a
stack ("cumulative") or on top ("self"), each sample weighted by the CPU
ticks its thread used since the one before (/proc/self/task), so waiting on
the API server weighs nothing; and the ticks of the event loop's thread
apart from the worker threads'; and objects-<minute>m.txt, one per minute of
the operator's life: RSS and the live objects by type, to see what grows with
the runs. With SCALE_TRACEMALLOC=<frames> also memory-<minute>m.txt: the lines
that hold the most memory (tracemalloc, which costs much CPU of its own: more
the more frames).
"""

from __future__ import annotations

import collections
import gc
import os
import sys
import threading
import time
import tracemalloc
from pathlib import Path
from types import CodeType, FrameType

_STARTED = time.monotonic()


def _where(code: CodeType) -> str:
    return f"{code.co_qualname} ({Path(code.co_filename).name}:{code.co_firstlineno})"


def _cpu_ticks() -> dict[int, int]:
    """CPU clock ticks (user + system) of each native thread of this process."""
    ticks = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks[int(task.name)] = int(fields[11]) + int(fields[12])
    return ticks


def _sampler(out: Path, interval: float) -> None:
    """Each thread's stack, weighted by the CPU ticks it used since the last sample
    (a thread blocked on a socket or a lock weighs nothing)."""
    me = threading.get_ident()
    own: collections.Counter[str] = collections.Counter()
    top: collections.Counter[str] = collections.Counter()
    kinds: collections.Counter[str] = collections.Counter()
    busy = 0
    written = time.monotonic()
    memory = bool(os.environ.get("SCALE_TRACEMALLOC"))
    last = _cpu_ticks()
    while True:
        time.sleep(interval)
        now = _cpu_ticks()
        natives = {t.ident: t.native_id for t in threading.enumerate()}
        for ident, frame in sys._current_frames().items():
            native = natives.get(ident)
            if ident == me or native is None:
                continue
            used = now.get(native, 0) - last.get(native, 0)
            if used <= 0:
                continue
            busy += used
            kinds["event loop" if native == os.getpid() else "worker threads"] += used
            top[_where(frame.f_code)] += used
            seen = set()
            f: FrameType | None = frame
            while f is not None:
                key = _where(f.f_code)
                if key not in seen:
                    seen.add(key)
                    own[key] += used
                f = f.f_back
        mine = natives.get(me)
        kinds["profiler"] += now.get(mine or 0, 0) - last.get(mine or 0, 0)
        last = now
        if time.monotonic() - written >= 20:
            written = time.monotonic()
            _write(out, busy, kinds, top, own, memory=memory)


def _shares(counts: collections.Counter[str], busy: int, n: int) -> list[str]:
    return [f"{c:7d} {100 * c / max(busy, 1):5.1f}%  {k}" for k, c in counts.most_common(n)]


def _write(
    out: Path,
    busy: int,
    kinds: collections.Counter[str],
    top: collections.Counter[str],
    own: collections.Counter[str],
    *,
    memory: bool,
) -> None:
    tick = os.sysconf("SC_CLK_TCK")
    lines = [f"CPU ticks {busy} (1/{tick} s) by thread: {dict(kinds)}", "", "== self"]
    lines += [*_shares(top, busy, 60), "", "== cumulative", *_shares(own, busy, 150)]
    (out / "cpu.txt").write_text("\n".join(lines) + "\n")
    minute = f"{int((time.monotonic() - _STARTED) / 60):03d}m"
    census = out / f"objects-{minute}.txt"
    if not census.exists():  # once a minute: a census of every object costs CPU
        census.write_text(_census())
    if not memory:
        return
    snap = tracemalloc.take_snapshot()
    stats = snap.statistics("lineno")
    text = [f"traced {sum(s.size for s in stats) / 1e6:.1f} MB; {_rss()}"]
    text += [f"{s.size / 1e6:8.2f} MB {s.count:8d}  {s.traceback}" for s in stats[:50]]
    for s in snap.statistics("traceback")[:8]:
        text += ["", f"{s.size / 1e6:.2f} MB {s.count}", *s.traceback.format()[-12:]]
    (out / "memory.txt").write_text("\n".join(text) + "\n")
    (out / f"memory-{minute}.txt").write_text("\n".join(text) + "\n")


def _rss() -> str:
    status = Path("/proc/self/status").read_text().splitlines()
    rss = next((line.split()[1] for line in status if line.startswith("VmRSS:")), "?")
    return f"RSS {rss} kB; threads {threading.active_count()}"


def _census() -> str:
    """Live objects that the garbage collector tracks, by type: count and shallow
    size (cheap enough for once a minute; what grows with the runs shows here)."""
    counts: collections.Counter[str] = collections.Counter()
    sizes: collections.Counter[str] = collections.Counter()
    for obj in gc.get_objects():
        name = f"{type(obj).__module__}.{type(obj).__qualname__}"
        counts[name] += 1
        sizes[name] += sys.getsizeof(obj)
    lines = [f"{_rss()}; gc-tracked objects {sum(counts.values())}, "
             f"{sum(sizes.values()) / 1e6:.1f} MB shallow", ""]  # fmt: skip
    lines += [f"{sizes[k] / 1e6:8.2f} MB {counts[k]:8d}  {k}" for k, _ in sizes.most_common(40)]
    return "\n".join(lines) + "\n"


def _start() -> None:
    target = os.environ.get("SCALE_PROFILE")
    if not target or "kopf" not in Path(sys.argv[0]).name:
        return
    out = Path(target)
    out.mkdir(parents=True, exist_ok=True)
    if os.environ.get("SCALE_TRACEMALLOC"):
        tracemalloc.start(int(os.environ["SCALE_TRACEMALLOC"]))  # frames per trace
    interval = float(os.environ.get("SCALE_PROFILE_INTERVAL", "0.02"))
    sampler = threading.Thread(target=_sampler, args=(out, interval), daemon=True)
    sampler.start()


_start()
