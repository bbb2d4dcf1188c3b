"""Report fields for a candidate's failure: its status, the error's name and a traceback trimmed to the
candidate's own frames (temporary paths shown as candidate.py). Used where the candidate runs."""

from __future__ import annotations

import re
import traceback
from typing import TYPE_CHECKING, Any

from kernelevolve.types import Status

if TYPE_CHECKING:
    from kernelevolve.backends.base import Backend

TRACEBACK_LINES = 15


def exception_fields(
    exc: BaseException, backend: Backend | None, stage: str, doing: str, module_name: str
) -> dict[str, Any]:
    """JSON-ready fields (the status as its value) for an exception raised by candidate code."""
    try:
        assert backend is not None
        status = backend.classify_error(exc, stage)
    except Exception:
        status = Status.COMPILE_ERROR if stage == "load" else Status.RUNTIME_ERROR
    text = traceback_text(exc, module_name)
    return {
        "status": status.value,
        "error_name": type(exc).__name__,
        "feedback": f"{doing} raised {type(exc).__name__}:\n{text}",
    }


def traceback_text(exc: BaseException, module_name: str) -> str:
    """Candidate frames plus the innermost frame, then the error itself; temp paths shown as candidate.py."""
    frames = traceback.extract_tb(exc.__traceback__)
    chosen = [f for f in frames if module_name and module_name in f.filename]
    innermost = frames[-1] if frames else None
    if innermost is not None and not innermost.filename.startswith("<frozen") and innermost not in chosen:
        chosen.append(innermost)  # where it failed, even inside torch or triton
    lines = "".join(traceback.format_list(chosen)).splitlines()[-TRACEBACK_LINES:]
    message = "".join(traceback.format_exception_only(type(exc), exc)).rstrip().splitlines()
    if len(message) > 2 * TRACEBACK_LINES:
        message = message[:TRACEBACK_LINES] + ["    ..."] + message[-TRACEBACK_LINES:]
    text = "\n".join(lines + message)
    if not module_name:
        return text
    return re.sub(r'"[^"\n]*' + re.escape(module_name) + r'\.py"', '"candidate.py"', text).replace(
        f"{module_name}.py", "candidate.py"
    )
