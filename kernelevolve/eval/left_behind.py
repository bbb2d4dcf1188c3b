"""Candidate code left installed to run inside the runner's own work (runner side).

Between the candidate's calls the runner does work of its own: it copies each output into the judge's slot
(a timed call's after its timed window), refreshes the next call's inputs, checks a timed output's type.
Whatever a candidate leaves installed when its code returns runs there too, outside the timed window and
below the strict trace, where it can compute the output the call returned empty: a dispatch or function mode
left on the thread's stack sees the runner's `copy_` of the returned tensor
(`tests/adversarial/hacks/strict_lazy_copy_via_dispatch_mode.py`), and so do an interpreter profile or trace
function (`lazy_output_via_profile_hook.py`), a garbage-collector callback, a signal handler or interval
timer, a method patched onto `torch.Tensor` or a storage, an audit hook, a builtin, import finder or
interpreter hook (`interpreter_hooks`). `snapshot()` records them before the candidate is imported;
`changed(own_modes)` names what differs once its code has returned. Like every run-time check this is the
runner's word: the static checks stand in front.
"""

from __future__ import annotations

import gc
import signal
import sys
from typing import Any

from kernelevolve.eval import interpreter_hooks

_TIMERS = tuple(getattr(signal, name) for name in ("ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF"))
_SNAPSHOT: dict[str, Any] = {}
_GONE = object()
# entries Python itself adds to a class: pickling caches its slot names there (`torch.save` of a tensor)
_CACHES = frozenset({"__slotnames__"})


def _namespaces() -> dict[str, Any]:
    import torch

    # parameters and buffers too: the strict trace reads an op's parameter arguments by their attributes
    classes = {"torch.Tensor": torch.Tensor, "torch.UntypedStorage": torch.UntypedStorage}
    classes["torch.nn.Parameter"] = torch.nn.Parameter
    if getattr(torch.nn, "Buffer", None) is not None:
        classes["torch.nn.Buffer"] = torch.nn.Buffer
    return classes


def snapshot() -> None:
    """Record the hooks as the runner leaves them, before candidate code runs."""
    _watch_audit_hooks()
    _SNAPSHOT.clear()
    _SNAPSHOT["profile"], _SNAPSHOT["trace"] = sys.getprofile(), sys.gettrace()
    _SNAPSHOT["gc"] = list(gc.callbacks)
    _SNAPSHOT["signals"] = {number: signal.getsignal(number) for number in signal.valid_signals()}
    _SNAPSHOT["classes"] = {name: dict(vars(cls)) for name, cls in _namespaces().items()}
    _SNAPSHOT["monitoring"] = _monitoring_tools()
    interpreter_hooks.snapshot()


def changed(own_modes: int = 0) -> list[str]:
    """What candidate code left installed since `snapshot()`; `own_modes`: dispatch modes the runner
    itself has entered at this point (the strict trace's)."""
    import torch

    if not _SNAPSHOT:
        return []
    found: list[str] = []
    if torch._C._len_torch_dispatch_stack() != own_modes or any(
        torch._C._get_dispatch_mode(key) is not None
        for key in torch._C._TorchDispatchModeKey.__members__.values()
    ):
        found.append("a dispatch mode left entered")
    if torch._C._len_torch_function_stack():
        found.append("a torch function mode left entered")
    if sys.getprofile() is not _SNAPSHOT["profile"] or sys.gettrace() is not _SNAPSHOT["trace"]:
        found.append("a profile or trace function")
    if gc.callbacks != _SNAPSHOT["gc"]:
        found.append("a garbage-collector callback")
    if any(signal.getsignal(n) is not h for n, h in _SNAPSHOT["signals"].items()) or any(
        signal.getitimer(timer) != (0.0, 0.0) for timer in _TIMERS
    ):
        found.append("a signal handler or interval timer")
    for name, cls in _namespaces().items():
        before = _SNAPSHOT["classes"][name]
        patched = sorted(
            k for k, v in vars(cls).items() if before.get(k, _GONE) is not v and k not in _CACHES
        )
        patched += sorted(k for k in before if k not in vars(cls))
        if patched:
            found.append(f"{name}.{patched[0]} patched")
    if _monitoring_tools() != _SNAPSHOT["monitoring"]:
        found.append("a sys.monitoring tool")
    if _AUDIT_HOOKS:
        found.append("an audit hook")
    return found + interpreter_hooks.changed()


_AUDIT_HOOKS: list[Any] = []  # audit hooks added since `snapshot` (Python lists none, removes none)


def _watch_audit_hooks() -> None:
    """Record every audit hook added from now on: one can be neither listed nor removed, and the runner's
    own work raises audit events (`open` and `mmap` as it maps the judge's tensors, `id()` in PyTorch's
    helpers), where a hook could compute an output its call returned empty
    (`tests/adversarial/hacks/lazy_output_via_audit_hook.py`). Wrapped before the candidate is imported,
    the original kept in a closure."""
    add = sys.addaudithook
    if getattr(add, "_kernelevolve_counted", False):
        return

    def recorded(hook: Any) -> None:
        _AUDIT_HOOKS.append(hook)
        add(hook)

    recorded._kernelevolve_counted = True  # type: ignore[attr-defined]
    sys.addaudithook = recorded


def _monitoring_tools() -> list[Any]:
    """Python 3.12's `sys.monitoring` tools (callbacks on interpreter events), none before."""
    monitoring = getattr(sys, "monitoring", None)
    return [] if monitoring is None else [monitoring.get_tool(tool) for tool in range(6)]
