"""The kinds a value of a call-path function may hold (see `values`): they only grow, so the call-path
fixpoint ends quickly."""

from __future__ import annotations

Kinds = frozenset[str]
# What a value may be: a tensor, data derived from the inputs, an alias of an input, something held
# between calls (self attribute / module container), a fresh allocation.
T, D, A, S, F = "tensor", "data", "alias", "state", "fresh"
# A Triton kernel (or a container holding some): `kernel[grid](...)` on such a value is a launch.
K = "kernel"
# Python / NumPy values holding input data read off a tensor (`.item()`, `.tolist()`, `float(x)`):
# fine as kernel arguments, but computing with them is computing outside the kernel (strict only).
H = "host"
# A tensor's method taken as a value (`f = x.clamp`, `getattr(x, "clamp")`): calling it is that method call.
METHOD = "method:"
# A local function taken as a value (`fn = launch`, an entry of a module-level dispatch table such as
# `BUCKETS = ((64, launch_narrow), ...)`): calling it is that function's call, with the call's arguments.
LOCAL = "local:"
EMPTY: Kinds = frozenset()
INPUT: Kinds = frozenset({T, D, A})
# What a call returns element by element when every `return` of the callee is a tuple of one length
# (`return out, n`), so `out, n = helper(x)` binds each name to its own element; `()` is "not known yet".
Shape = tuple[Kinds, ...]
UNKNOWN_SHAPE: Shape = ()
DATA_ATTRS = frozenset({"T", "mT", "H", "mH", "data", "real", "imag"})
