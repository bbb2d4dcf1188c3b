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
# Each request's number, echoed in its reply: a frame written on the channel by a candidate (`os.write` on
# the inherited descriptor) is read as the next reply, and without a number the runner's own replies would
# then answer the wrong requests, one behind, unnoticed. It is no authentication (a candidate in the runner
# can read the number), only a shift made a clean failure.
SEQUENCE = "seq"


class ReplyError(ValueError):
    """A reply that is not what the protocol allows (too long, not JSON, wrong types)."""


def send_reply(conn: Connection, reply: dict[str, Any]) -> None:
    conn.send_bytes(json.dumps(reply, default=str, allow_nan=True).encode())


def read_reply(conn: Connection, sequence: int | None = None) -> dict[str, Any]:
    """The next reply; with `sequence`, it must answer request number `sequence`."""
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
    if sequence is not None:
        check_sequence(reply, sequence)
    return reply


def check_sequence(reply: dict[str, Any], expected: int) -> None:
    """The reply answers request number `expected`, or ReplyError."""
    got = reply.get(SEQUENCE)
    if got != expected or isinstance(got, bool):
        raise ReplyError(f"reply out of step: it answers request {str(got)[:20]}, not {expected}")


def finite_numbers(values: Any, name: str) -> list[float]:
    """A JSON list of finite, non-negative numbers (timing samples)."""
    if not isinstance(values, list) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
        for v in values
    ):
        raise ReplyError(f"{name} must be a list of finite non-negative numbers")
    return [float(v) for v in values]
