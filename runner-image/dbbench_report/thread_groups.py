"""The report's words for thread groups (``mix.by: connections``): each group's
connections, throughput and p99, from a step summary's ``connectionGroups``
and its figures by operation type (pure)."""

from __future__ import annotations

from html import escape

from dbbench_contract.summary import OperationSummary
from dbbench_report.cells import fmt
from dbbench_report.reading import Run


def thread_groups(run: Run) -> str:
    """Each thread group (mix.by connections) in words: its connections ran only
    its operation type, so that type's figures are the group's."""
    lines = []
    for step in run.steps:
        by_type = step.summary.operations_by_type
        groups = [_group(kind, size, by_type.get(kind))
                  for kind, size in step.summary.connection_groups.items()]  # fmt: skip
        if groups:
            lines.append(f"{step.phase} on {step.target} (repeat {step.repeat}): "
                         + "; ".join(groups))  # fmt: skip
    if not lines:
        return ""
    return (
        "<p>Thread groups (<code>mix.by: connections</code>): each group's connections ran "
        "only its operation type, so that type's row below is the group's throughput and "
        "latency; in other phases every connection ran each of the phase's types (all).</p>"
        + "".join(f'<p data-key="threadGroups">{escape(line)}</p>' for line in lines)
    )


def _group(kind: str, size: int, figures: OperationSummary | None) -> str:
    if figures is None:
        return f"{kind} group: {size:,} connections, no operations"
    return (
        f"{kind} group: {size:,} connections, {fmt(figures.throughput)} ops/s, "
        f"p99 {fmt(figures.latency_ms.p99, 3)} ms"
    )
