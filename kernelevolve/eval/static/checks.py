"""Stage 1 of the harness: reject a candidate by reading its AST, before any of it runs.

Pure ``ast`` (nothing here imports torch, triton or cutlass). ``check_source`` and ``BACKENDS`` are
the public API; the work is split by concern into sibling modules:

- ``rules``: the PyTorch allow-lists and the banned-name tables;
- ``module``: import-alias resolution and the candidate's definitions and kernels;
- ``module_rules``: rules over the whole module (banned names, module-level compute);
- ``callpath``: the call path from ``ModelNew.forward`` and the backend-kernel check;
- ``values`` (with ``calls`` for calls, ``kinds`` for the kinds) / ``flow``: what each name may hold
  along that path (expressions and stores / statements).

Every rule works on the syntax tree (never on the text) with import aliases resolved (so
``F.softmax`` after ``import torch.nn.functional as F`` reads as ``torch.nn.functional.softmax``;
see ``module``). ``if __name__ == "__main__":`` self-tests are ignored (they never run
under the harness) unless the source rebinds ``__name__``. The call path is ``ModelNew.forward``
(its ``*args`` / ``**kwargs`` are inputs too) plus every local function, method and class it calls or
passes along, including methods of local-class instances made at module level (never ``__init__``
of ModelNew, never kernel bodies). Issue codes (the harness reports ``syntax_error`` as COMPILE_ERROR
and every other code as REJECTED_STATIC):

- ``syntax_error``, ``missing_model_new``: no parse, or no ``class ModelNew`` with a ``forward``;
  ``too_complex``: nested too deeply to analyse (a generated expression thousands of terms deep).
- ``no_backend_kernel``: triton: no ``@triton.jit`` kernel launched (``kernel[grid](...)``, where
  ``kernel`` may also be a parameter, element or attribute that holds one) from code reachable from
  ``ModelNew.forward``; cute: no ``@cute.kernel``/``@cute.jit`` function used
  from ``ModelNew`` (its ``__init__`` counts: compiling there is the usual CuTe idiom).
- ``try_except_fallback``: in the call path, a bare ``except``, a handler that computes in PyTorch
  (or calls the reference / a helper that does), or a handler that swallows a failure of the
  kernel work without re-raising; ``contextlib.suppress`` anywhere.
- ``torch_compute_op`` (strict only): PyTorch doing the work in the call path, or at module or
  class level: a torch/F call outside the allow-list, the ``@`` operator, a call of an ``nn`` layer
  held by ``ModelNew``, a compute method on a tensor (also when taken as a value and called later:
  ``f = x.clamp``, ``getattr(x, "clamp")``), arithmetic or comparison on names known to hold tensors
  (what counts, and how tensor-ness is tracked, is in ``values``), and a PyTorch compute
  function named without being called (``OPS = {"relu": torch.relu}``).
- ``host_compute`` (strict only): the work done on the host instead: ``.numpy()``, a tensor's raw
  storage, text of tensor data (``str``, f-strings, ``.format``), non-backend libraries (numpy,
  math, operator...) handed tensor data, truth tests of it, and any computing with host copies of
  input data (``.item()``, ``.tolist()``, ``float(x)`` give such copies; passing one to a kernel is
  fine, arithmetic, comparisons, builtins such as ``max`` / ``sorted`` and their methods are not).
- ``torch_compile``: torch.compile / torch.jit / torch._dynamo / torch._inductor / torch.export /
  torch.fx anywhere (strict or not: it hides the work).
- ``thread_spawn``: threading, multiprocessing, concurrent, asyncio, subprocess, signal, os.fork,
  os.system, os.spawn*/exec* and friends.
- ``side_stream``: creating or switching CUDA streams or events. ``cuda_graph`` (strict only):
  CUDA graph capture/replay replays work captured for other tensors and hides launch cost the
  baselines pay; non-strict runs may use graphs, and the correctness trials still see fresh inputs.
- ``patching``: storing into (or ``setattr``/``delattr``/``__dict__``/``os.environ`` on) an imported
  module such as torch, time, triton, builtins; process-wide state changes (seeds, default dtype,
  matmul precision, thread count, deterministic mode, backend flags).
- ``introspection``: ctypes, gc, inspect, traceback, sys._getframe / settrace / modules, frame
  attributes (f_back, f_locals...), globals()/locals()/vars(), private ``torch._*`` internals.
- ``reference_access``: importing the reference, the harness or file/network modules, ``open``,
  torch.load / numpy.load, any use of the names ``Model`` / ``get_inputs`` / ``get_init_inputs``.
- ``dynamic_code``: exec, eval, compile, __import__, importlib, runpy, pickle, marshal, building
  functions from code objects, getattr on torch or on input data with a computed name (and a method
  so chosen off another tensor, called on input data), operator.methodcaller / attrgetter; kernels
  built outside the chosen backend (torch.utils.cpp_extension, cupy, numba, pycuda).
- ``module_not_allowed``: an import (or a module reached through attributes) outside the kernel
  languages, torch, numpy, einops and pure standard-library helpers (``rules.CANDIDATE_MODULES``): other
  modules reach files, processes, code given as text or raw memory (`posix`, `imp`, `wrapt`, ...).
- ``lazy_result``: tensor subclasses, ``__torch_function__`` / ``__torch_dispatch__``,
  ``as_subclass``, ``__class__`` assignment, ``__del__`` (a finalizer the garbage collector runs inside
  the harness's work) (a result whose work happens later, or never).
- ``state_between_calls``: in the call path (never ``__init__``), ``global`` statements, mutable
  default arguments, ``functools.lru_cache``/``cache`` on helpers that get tensors, stores on
  self / module globals / function or class attributes of data derived from the inputs, any cache
  keyed by ``data_ptr()`` or ``id()``, storing the tensor that forward returns, and returning a
  tensor held on self or in a module-level container. Compiled kernels (``cute.compile``,
  ``functools.partial``) and shape/config values may be cached; the scratch-buffer trade-off is
  in ``values``.
- ``returns_input``: forward returns one of its inputs or a view of one.
"""

from __future__ import annotations

import ast

from kernelevolve.eval.static.callpath import Checker
from kernelevolve.types import StaticIssue

__all__ = ["BACKENDS", "check_source", "reference_state"]

BACKENDS = ("cute", "triton")


def _drop_main_guard(tree: ast.Module) -> None:
    """Remove ``if __name__ == "__main__":`` blocks: the harness imports candidates under another name,
    so such self-tests never run (unless the source rebinds ``__name__``, which then keeps them)."""
    if any(
        isinstance(n, ast.Name) and n.id == "__name__" and not isinstance(n.ctx, ast.Load)
        for n in ast.walk(tree)
    ):
        return

    def is_guard(stmt: ast.stmt) -> bool:
        test = stmt.test if isinstance(stmt, ast.If) else None
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
            return False
        sides = [test.left, test.comparators[0]]
        return any(isinstance(x, ast.Name) and x.id == "__name__" for x in sides) and any(
            isinstance(x, ast.Constant) and x.value == "__main__" for x in sides
        )

    tree.body = [stmt for stmt in tree.body if not is_guard(stmt)]


def reference_state(reference_source: str) -> frozenset[str]:
    """The attributes the reference's Model assigns on self outside ``__init__``: state it keeps
    between calls, which a candidate must keep too (none for a reference that does not parse)."""
    try:
        tree = ast.parse(reference_source)
    except (SyntaxError, ValueError, RecursionError):
        return frozenset()
    names: set[str] = set()
    for model in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"):
        for method in (n for n in model.body if isinstance(n, ast.FunctionDef) and n.name != "__init__"):
            for node in ast.walk(method):
                targets = node.targets if isinstance(node, ast.Assign) else []
                if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                    targets = [node.target]
                names.update(
                    t.attr
                    for t in targets
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                )
    return frozenset(names)


def candidate_issues(
    source: str, backend_name: str, strict: bool, reference_source: str = ""
) -> list[StaticIssue]:
    """Every static issue the harness rejects a candidate for: the generic checks (`check_source`, with
    the reference's own state allowed), then the backend's own where they add a code. Operators that can
    tell before proposing use it too, so a seed the harness would reject costs no evaluation."""
    from kernelevolve.backends import get_backend

    issues = check_source(source, backend_name, strict, reference_state(reference_source))
    seen = {issue.code for issue in issues}
    return issues + [i for i in get_backend(backend_name).static_issues(source) if i.code not in seen]


def check_source(
    source: str, backend: str, strict: bool, reference_state: frozenset[str] = frozenset()
) -> list[StaticIssue]:
    """All static issues of a candidate source, sorted by line; empty means it may run.
    `reference_state`: see `reference_state`; ModelNew may store into those attributes per call."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; valid: {', '.join(BACKENDS)}")
    try:
        tree = ast.parse(source)
    except RecursionError:
        return [StaticIssue("too_complex", "the source is nested too deeply to parse and check")]
    except (SyntaxError, ValueError) as exc:
        return [
            StaticIssue("syntax_error", f"candidate does not parse: {exc}", getattr(exc, "lineno", 0) or 0)
        ]
    _drop_main_guard(tree)
    checker = Checker(tree, backend, strict, reference_state)
    try:
        checker.run()
    except RecursionError:  # e.g. a generated expression thousands of terms deep
        return [StaticIssue("too_complex", "the source is nested too deeply for the static checks")]
    return sorted(checker.issues.values(), key=lambda i: (i.line, i.code, i.message))
