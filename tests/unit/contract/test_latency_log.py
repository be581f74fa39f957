"""Interval logs as hdrh writes them read back: every interval, its start, length and
encoded histogram, in file order; comments, the legend and tags skipped; a line
that is no interval refused, quoting it."""

from __future__ import annotations

import io

import pytest
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogWriter

from dbbench_contract.latency_log import (
    HIGHEST_US,
    LOWEST_US,
    MAX_VALUE_UNIT_RATIO,
    SIGNIFICANT_DIGITS,
    parse_interval_log,
)


def written(*intervals: tuple[float, float, list[int]]) -> str:
    """An interval log written by hdrh's own writer, as the runner writes it."""
    buffer = io.StringIO()
    log = HistogramLogWriter(buffer)
    log.output_comment("dbbench mariadb/load operation=insert unit=us")
    log.output_legend()
    for start, end, latencies in intervals:
        hdr = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)
        for latency in latencies:
            hdr.record_value(latency)
        log.output_interval_histogram(hdr, start, end, max_value_unit_ratio=MAX_VALUE_UNIT_RATIO)
    return buffer.getvalue()


def test_every_interval_is_read_in_file_order_with_its_histogram() -> None:
    text = written((1000, 1001, [150, 2500]), (1001, 1002, [90]), (900.5, 1000.5, [10] * 7))
    intervals = parse_interval_log(text)
    assert [(i.start, i.length) for i in intervals] == [(1000, 1), (1001, 1), (900.5, 100)]
    assert [i.is_second for i in intervals] == [True, True, False]
    assert [i.second for i in intervals[:2]] == [1000, 1001]
    counts = [HdrHistogram.decode(i.encoded).get_total_count() for i in intervals]
    assert counts == [2, 1, 7]


def test_tagged_lines_are_read_and_other_lines_refused() -> None:
    (line,) = [x for x in written((5, 6, [1])).splitlines() if x[0].isdigit()]
    (tagged,) = parse_interval_log(f"Tag=insert,{line}\n")
    assert (tagged.start, tagged.length) == (5, 1)
    with pytest.raises(ValueError, match=r"not an interval histogram line: '5\.0,1\.0'"):
        parse_interval_log("5.0,1.0\n")
    assert parse_interval_log("#only a comment\n\n") == []
