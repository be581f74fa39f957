"""An hdrh-encoded histogram read straight into its non-empty buckets.

hdrh's decoder fills a dense counts array (23,552 buckets for our layout), and
copying out its few hundred non-empty ones walked all of them: ~5 ms per
interval, the bulk of a step merge (64 pods x 60 s x 2 kinds). The encoding
(HdrHistogram's V2 format: base64 of a header and a zlib-compressed payload of
ZigZag LEB128 counts, runs of empty buckets as one negative number) already
skips the empty buckets, so reading it directly costs what the histogram holds.

Only for histograms of our bucket layout (lowest 1, highest one hour, 3
significant digits, see dbbench_contract.hdr_buckets); anything else is None and
the caller goes through hdrh.
"""

from __future__ import annotations

import base64
import struct
import zlib

from dbbench_contract.hdr_buckets import HIGHEST_US, LOWEST_US, SIGNIFICANT_DIGITS, SIZE, highest_of

# hdrh's cookies (hdrh.codec): the outer header's (compressed) and the payload's.
_COMPRESSION_COOKIE = 0x1C849304
_ENCODING_COOKIE = 0x1C849303
_OUTER = struct.Struct(">II")  # cookie, length of the compressed payload
# cookie, payload length, normalizing index offset, significant digits, lowest,
# highest, conversion ratio
_PAYLOAD = struct.Struct(">IIIIqqd")


def _cookie_base(cookie: int) -> int:
    return cookie & ~0xF0


def _varints(data: bytes, start: int, end: int) -> list[int]:
    """ZigZag LEB128 numbers, as HdrHistogram's ZigZagEncoding reads them: seven
    bits a byte, the ninth byte of a number all eight."""
    values = []
    i = start
    while i < end:
        byte = data[i]
        i += 1
        raw = byte & 0x7F
        shift = 7
        while byte & 0x80:
            byte = data[i]
            i += 1
            if shift == 56:
                raw |= byte << 56
                break
            raw |= (byte & 0x7F) << shift
            shift += 7
        values.append((raw >> 1) ^ -(raw & 1))
    return values


def sparse_counts(encoded: bytes) -> tuple[dict[int, int], int] | None:
    """({bucket index: count} of the non-empty buckets, the max value as hdrh
    reports it) of one base64 histogram; None when its layout is not ours."""
    outer = base64.b64decode(encoded)
    if len(outer) < _OUTER.size:
        return None
    cookie, length = _OUTER.unpack_from(outer)
    if _cookie_base(cookie) != _COMPRESSION_COOKIE or length != len(outer) - _OUTER.size:
        return None
    data = zlib.decompress(outer[_OUTER.size :])
    if len(data) < _PAYLOAD.size:
        return None
    cookie, payload_len, offset, digits, lowest, highest, _ = _PAYLOAD.unpack_from(data)
    if (
        _cookie_base(cookie) != _ENCODING_COOKIE  # V2: ZigZag LEB128 counts
        or (offset, digits, lowest, highest) != (0, SIGNIFICANT_DIGITS, LOWEST_US, HIGHEST_US)
    ):
        return None
    counts: dict[int, int] = {}
    index = 0
    for value in _varints(data, _PAYLOAD.size, min(len(data), _PAYLOAD.size + payload_len)):
        if index >= SIZE:  # hdrh stops at its counts array's end
            break
        if value < 0:
            index -= value  # a run of empty buckets
            continue
        if value:
            counts[index] = value
        index += 1
    top = max(counts, default=None)
    return counts, 0 if top is None else highest_of(top)
