"""Alarms that start a run's next pass early: one per run, rung by what the watches
show (a change of one of the run's children, another run releasing its nodes,
a node's labels or capacity changing) and waited on by the run's loop
(`controller/run_loop`).

Everything here runs on kopf's event loop (async handlers and daemons), so
nothing needs a lock. A ring for a run with no loop (not started yet, or
ended) is dropped: a loop starts with a pass anyway.
"""

from __future__ import annotations

import asyncio


class Alarms:
    def __init__(self) -> None:
        self._alarms: dict[str, asyncio.Event] = {}
        self._waiting_for_nodes: set[str] = set()

    def __len__(self) -> int:
        """Runs with a loop: the active runs that `pass_timing` shares its budget among."""
        return len(self._alarms)

    def register(self, uid: str) -> asyncio.Event:
        """A new alarm for the run's loop (cleared before each pass, waited on after)."""
        alarm = self._alarms[uid] = asyncio.Event()
        return alarm

    def forget(self, uid: str, alarm: asyncio.Event) -> None:
        """The loop ended (a loop started since for the same run keeps its own alarm)."""
        if self._alarms.get(uid) is alarm:
            del self._alarms[uid]
            self._waiting_for_nodes.discard(uid)

    def ring(self, uid: str) -> bool:
        """Start the run's next pass (after its loop's minimum gap); False: no such loop."""
        alarm = self._alarms.get(uid)
        if alarm is None:
            return False
        alarm.set()
        return True

    def waiting_for_nodes(self, uid: str, *, waiting: bool) -> None:
        """Remember which runs wait for nodes that another run holds."""
        if waiting:
            self._waiting_for_nodes.add(uid)
        else:
            self._waiting_for_nodes.discard(uid)

    def ring_waiting_for_nodes(self) -> int:
        """Nodes were released (or changed): every waiting run looks again."""
        for uid in list(self._waiting_for_nodes):
            self.ring(uid)
        return len(self._waiting_for_nodes)


ALARMS = Alarms()
