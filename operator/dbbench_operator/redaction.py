"""Driver and server error text made safe for the status, Events and logs (pure).

Raw driver messages echo what the driver was given: a URI with its password,
`user@host:port`, MySQL's `'user'@'host'`, the server's address. The
operator's rule (docs/operator.md) is the exception's type and code only
(`driver_error`); text that must be shown because it is all there is (a
replica's `Last_IO_Error`, a runner pod's termination message) goes through
`scrub`, which keeps the words and takes out URIs, user names, host names and
addresses.
"""

from __future__ import annotations

import re

_SUBSTITUTIONS = (
    # scheme://anything: a URI can carry user, password, hosts and options.
    (re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"),;]+"), "<uri>"),
    # MySQL's 'user'@'host' (quoted, either quote style).
    (re.compile(r"(['`\"])[^'`\"]*\1@(['`\"])[^'`\"]*\2"), "'<user>'@'<host>'"),
    # user@host[:port] (replication: "error connecting to master 'repl@db-0...:3306'").
    (re.compile(r"[\w.%+-]+@[\w.-]+(?::\d+)?"), "<user>@<host>"),
    # password=..., pwd: ... in option strings and DSNs.
    (re.compile(r"(?i)\b(password|passwd|pwd)\s*[=:]\s*\S+"), r"\1=<redacted>"),
    # IPv4 and bracketed IPv6 addresses, with a port if any.
    (re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b"), "<address>"),
    (re.compile(r"\[[0-9A-Fa-f:]+\](?::\d+)?"), "<address>"),
    # host names with a dot, and host:port (pod and Service DNS names, external hosts).
    (re.compile(r"\b(?=[\w-]*[A-Za-z])[\w-]+(?:\.[\w-]+)+:\d+\b"), "<host>:<port>"),
    (re.compile(r"\b[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.(?:svc|local|internal|com|net|org|io)\b"),
     "<host>"),
    # MySQL client errors: "... on 'host' (111)", "Unknown MySQL server host 'x'".
    (re.compile(r"(?i)\b(host|server|on)\s+'[^']*'"), r"\1 '<host>'"),
)  # fmt: skip


def scrub(text: str, limit: int = 1500) -> str:
    """`text` without URIs, users, hosts, addresses or passwords, shortened to `limit`."""
    for pattern, replacement in _SUBSTITUTIONS:
        text = pattern.sub(replacement, text)
    return text[:limit]


def driver_error(exc: BaseException) -> str:
    """What may be said of a driver exception: its type and its numeric code and code
    name when it has them (MySQL errno, MongoDB code/codeName, PostgreSQL SQLSTATE),
    never its text."""
    parts = [type(exc).__name__]
    code = getattr(exc, "errno", None) or getattr(exc, "code", None)
    if isinstance(code, int) and code:
        parts.append(f"code {code}")
    sqlstate = getattr(exc, "sqlstate", None)
    if isinstance(sqlstate, str) and re.fullmatch(r"[0-9A-Z]{5}", sqlstate):
        parts.append(f"sqlstate {sqlstate}")
    details = getattr(exc, "details", None)
    name = details.get("codeName") if isinstance(details, dict) else None
    if isinstance(name, str) and re.fullmatch(r"[A-Za-z]+", name):
        parts.append(name)
    return " ".join(parts)
