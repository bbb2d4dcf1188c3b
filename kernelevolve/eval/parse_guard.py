"""`ast.parse` from several threads at once, made safe on the CPython releases where it races.

CPython 3.11.0-3.11.7 and 3.12.0-3.12.1 keep the AST constructor's recursion depth in interpreter-wide
state. A garbage collection inside `ast.parse` whose finalizer releases the GIL lets another thread
parse meanwhile, and one of the two fails with a spurious "SystemError: AST constructor recursion depth
mismatch" (python/cpython gh-106905, fixed in 3.11.8 and 3.12.2). Sweeps run problems in threads and
Triton compiles kernels in a thread pool, and a failed parse cost a sweep a whole problem
(experiments/sweep_isolation_cpu_s9), so on those releases every `ast.parse` in the process (ours,
Triton's, torch's) takes one re-entrant lock. Elsewhere nothing is changed.
"""

from __future__ import annotations

import ast
import functools
import sys
import threading
from typing import Any

_LOCK = threading.RLock()
_MARK = "_kernelevolve_serialised"


def races(version: tuple[int, ...] = tuple(sys.version_info[:3])) -> bool:
    """Whether this CPython release's `ast.parse` races between threads (gh-106905)."""
    return (3, 11, 0) <= version < (3, 11, 8) or (3, 12, 0) <= version < (3, 12, 2)


def serialise_parsing() -> None:
    """On a racing release, make `ast.parse` hold one process-wide lock (idempotent)."""
    if not races() or getattr(ast.parse, _MARK, False):
        return
    unguarded = ast.parse

    @functools.wraps(unguarded)
    def parse(*args: Any, **kwargs: Any) -> Any:
        with _LOCK:
            return unguarded(*args, **kwargs)

    setattr(parse, _MARK, True)
    ast.parse = parse  # type: ignore[assignment]
