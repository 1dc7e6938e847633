"""The one message format between the app and its child processes: versioned JSON objects.

Each message is one JSON object with ``"v"`` (protocol version) and ``"type"``. A job's worker
sends lines of them on a pipe of its own (native libraries print to stdout and stderr, so
messages never travel there):

- ``stage``: ``name``, optional ``fraction`` — a new step began
- ``progress``: ``fraction`` (0..1)
- ``log``: ``text`` — a line for the job's log
- ``warning``: ``text`` — shown with the result
- ``result``: ``report`` — the job's :class:`~edgestudio.core.job_api.report.JobReport` as a dict
- ``error``: ``error_type``, ``message``, ``traceback`` — the job raised

The fork server (:mod:`edgestudio.jobs.fork_server`) and the app exchange the same objects, one
per datagram of their socket:

- ``start``: ``spec`` — app to server: fork a worker for the job in this spec file
- ``loaded`` — the server has loaded the job modules
- ``started``: ``pid`` — the worker asked for was forked
- ``exited``: ``pid``, ``code`` — a worker ended (its exit status, which only its parent reads)
"""

from __future__ import annotations

import json
from typing import Any

PROTOCOL_VERSION = 1


def encode(msg_type: str, **fields: Any) -> bytes:
    """Return one message, newline-terminated."""
    return (json.dumps({"v": PROTOCOL_VERSION, "type": msg_type, **fields}) + "\n").encode()


def decode(data: bytes) -> dict[str, Any] | None:
    """Parse one message; None for garbage or a different protocol version."""
    try:
        msg = json.loads(data)
    except ValueError:
        return None
    if not isinstance(msg, dict) or msg.get("v") != PROTOCOL_VERSION or "type" not in msg:
        return None
    return msg
