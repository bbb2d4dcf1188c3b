"""The runner-to-judge direction: JSON text of bounded size, never a pickle.

Unpickling bytes a candidate's process wrote would run its code in the judge. Replies are parsed as
JSON and read only through `field`, which checks each value's type, so a forged reply can at worst
describe a failure of the candidate's own making.
"""

from __future__ import annotations

import json
import math
from multiprocessing.connection import Connection
from typing import Any

MAX_REPLY_BYTES = 16 << 20


class ReplyError(ValueError):
    """A reply that is not what the protocol allows (too long, not JSON, wrong types)."""


def send_reply(conn: Connection, reply: dict[str, Any]) -> None:
    conn.send_bytes(json.dumps(reply, default=str, allow_nan=True).encode())


def read_reply(conn: Connection) -> dict[str, Any]:
    try:
        data = conn.recv_bytes(MAX_REPLY_BYTES)
    except OSError as exc:
        if "too long" in str(exc) or "bad message length" in str(exc):
            raise ReplyError(f"reply longer than {MAX_REPLY_BYTES} bytes") from None
        raise
    try:
        reply = json.loads(data.decode())
    except (UnicodeDecodeError, ValueError) as exc:
        raise ReplyError(f"reply is not JSON: {exc}") from None
    if not isinstance(reply, dict):
        raise ReplyError("reply is not a JSON object")
    return reply


def finite_numbers(values: Any, name: str) -> list[float]:
    """A JSON list of finite, non-negative numbers (timing samples)."""
    if not isinstance(values, list) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
        for v in values
    ):
        raise ReplyError(f"{name} must be a list of finite non-negative numbers")
    return [float(v) for v in values]
