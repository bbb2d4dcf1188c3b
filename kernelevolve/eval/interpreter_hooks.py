"""What the interpreter calls on the runner's behalf, recorded before the candidate's import (runner side).

The runner's own code looks names up in `builtins` and runs `import torch` (and others) inside its functions,
and the interpreter calls hooks of its own: an `import` of a module missing from `sys.modules` asks every
finder on `sys.meta_path` and every path hook, `sys.unraisablehook` and `warnings.showwarning` run on events
the runner's work can raise. A candidate that replaces a builtin, takes a loaded module out of `sys.modules`
with a finder of its own in place (`tests/adversarial/hacks/lazy_output_via_import_hook.py`: the runner's
next `import torch`, inside the timed guard, computes the output), or sets such a hook, runs code inside
the runner's work with nothing `left_behind` listed before. `snapshot` records them; `changed` names what
differs, by identity alone (`==` would call a replaced object's `__eq__`). Part of `left_behind`'s check.

Not covered: `sys.path` (PyTorch and the CuTe DSL add entries lazily), a module's `__spec__` replaced (the
import of a loaded module reads its `_initializing`), our modules' and PyTorch's attributes: the runner's
own state, which the static checks keep a candidate from reaching.
"""

from __future__ import annotations

import builtins
import operator
import sys
import threading
import warnings
from typing import Any

_SNAPSHOT: dict[str, Any] = {}


def _hooks() -> list[Any]:
    return [
        sys.unraisablehook,
        sys.excepthook,
        sys.displayhook,
        sys.breakpointhook,
        threading.excepthook,
        warnings.showwarning,
        getattr(warnings, "_showwarnmsg", None),
    ]


def _same(before: list[Any], now: list[Any]) -> bool:
    return len(before) == len(now) and all(map(operator.is_, before, now))


def snapshot() -> None:
    namespace = vars(builtins)
    _SNAPSHOT["builtins"] = (list(namespace), list(namespace.values()))
    _SNAPSHOT["modules"] = (list(sys.modules), list(sys.modules.values()))
    _SNAPSHOT["finders"] = [*sys.meta_path, None, *sys.path_hooks]
    _SNAPSHOT["hooks"] = _hooks()


def changed() -> list[str]:
    """What differs from `snapshot` (nothing before it was taken)."""
    if not _SNAPSHOT:
        return []
    found: list[str] = []
    names, values = _SNAPSHOT["builtins"]
    if not _same(values, list(map(vars(builtins).get, names))):
        found.append("a builtin replaced")
    names, values = _SNAPSHOT["modules"]
    if not _same(values, list(map(sys.modules.get, names))):
        found.append("a loaded module taken out of sys.modules or replaced")
    if not _same(_SNAPSHOT["finders"], [*sys.meta_path, None, *sys.path_hooks]):
        found.append("an import finder or path hook")
    if not _same(_SNAPSHOT["hooks"], _hooks()):
        found.append("an interpreter hook (unraisable, except, display, breakpoint or warnings)")
    return found
