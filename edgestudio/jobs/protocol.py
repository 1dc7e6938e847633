"""The JSON-lines protocol between a job worker and its parent, on a pipe of its own.

Native libraries print to stdout and stderr, so messages never travel there. Each line is one
JSON object with ``"v"`` (protocol version) and ``"type"``:

- ``stage``: ``name``, optional ``fraction`` — a new step began
- ``progress``: ``fraction`` (0..1)
- ``log``: ``text`` — a line for the job's log
- ``warning``: ``text`` — shown with the result
- ``result``: ``report`` — the job's :class:`~edgestudio.core.job_api.report.JobReport` as a dict
- ``error``: ``error_type``, ``message``, ``traceback`` — the job raised
"""

from __future__ import annotations

import json
from typing import Any

PROTOCOL_VERSION = 1


def encode(msg_type: str, **fields: Any) -> bytes:
    """Return one protocol line."""
    return (json.dumps({"v": PROTOCOL_VERSION, "type": msg_type, **fields}) + "\n").encode()


def decode(line: bytes) -> dict[str, Any] | None:
    """Parse one line; None for garbage or a different protocol version."""
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    if not isinstance(msg, dict) or msg.get("v") != PROTOCOL_VERSION or "type" not in msg:
        return None
    return msg
