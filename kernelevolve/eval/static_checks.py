"""Stage 1 of the harness: reject a candidate by reading its AST, before any of it runs.

Every rule works on the syntax tree (never on the text) with import aliases resolved, so
``import torch.nn.functional as F; F.softmax``, ``from torch import compile as c``, module-level
``Event = torch.cuda.Event`` and ``getattr(torch, "compile")`` read the same as the spelled-out
names. ``if __name__ == "__main__":`` self-tests are ignored (they never run under the harness)
unless the source rebinds ``__name__``. The call path is ``ModelNew.forward`` plus every local
function, method and class it calls or passes along (never ``__init__`` of ModelNew, never kernel
bodies). Issue codes (the harness reports ``syntax_error`` as COMPILE_ERROR and every other code
as REJECTED_STATIC):

- ``syntax_error``, ``missing_model_new``: no parse, or no ``class ModelNew`` with a ``forward``;
  ``too_complex``: nested too deeply to analyse (a generated expression thousands of terms deep).
- ``no_backend_kernel``: triton: no ``@triton.jit`` kernel launched (``kernel[grid](...)``) from
  code reachable from ``ModelNew.forward``; cute: no ``@cute.kernel``/``@cute.jit`` function used
  from ``ModelNew`` (its ``__init__`` counts: compiling there is the usual CuTe idiom).
- ``try_except_fallback``: in the call path, a bare ``except``, a handler that computes in PyTorch
  (or calls the reference / a helper that does), or a handler that swallows a failure of the
  kernel work without re-raising; ``contextlib.suppress`` anywhere.
- ``torch_compute_op`` (strict only): PyTorch doing the work in the call path, or at module or
  class level: a torch/F call outside the allow-list below, the ``@`` operator, a call of an
  ``nn`` layer held by ``ModelNew``, a compute method on a tensor (any method outside
  ``_TENSOR_METHODS_OK`` on a name known to hold a tensor; on receivers of unknown type only the
  ``_COMPUTE_METHODS`` names), and arithmetic or comparison on names known to hold tensors.
  Tensor-ness is tracked per function in source order: forward's parameters (unless annotated
  int/float/bool/str), torch allocations, views of tensors, tensor parameters and buffers made in
  ``__init__``; helpers get the kinds of the arguments their call sites pass.
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
  functions from code objects, getattr on torch with a computed name; kernels built outside the
  chosen backend (torch.utils.cpp_extension, cupy, numba, pycuda).
- ``lazy_result``: tensor subclasses, ``__torch_function__`` / ``__torch_dispatch__``,
  ``as_subclass``, ``__class__`` assignment (a result whose work happens later, or never).
- ``state_between_calls``: in the call path (never ``__init__``), ``global`` statements, mutable
  default arguments, ``functools.lru_cache``/``cache`` on helpers that get tensors, stores on
  self / module globals / function or class attributes of data derived from the inputs, any cache
  keyed by ``data_ptr()`` or ``id()``, storing the tensor that forward returns, and returning a
  tensor held on self or in a module-level container. Compiled kernels (``cute.compile``,
  ``functools.partial``) and shape/config values may be cached.
  Trade-off: scratch buffers are fine when made in ``__init__`` or stored straight from a fresh
  allocation (``self._buf[shape] = torch.empty(...)``), because their contents are rewritten each
  call; a returned tensor may not persist, even a pre-allocated one, since that is what a cached
  result looks like (and the caller's previous result would change under it). Anything subtler
  (state hidden in closures or local objects, work done in ``__init__`` from a predicted seed) is
  left to the correctness trials, which call one instance on several fresh seeded inputs.
- ``returns_input``: forward returns one of its inputs or a view of one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from kernelevolve.types import StaticIssue

BACKENDS = ("cute", "triton")
Kinds = frozenset[str]
# What a value may be: a tensor, data derived from the inputs, an alias of an input, something held
# between calls (self attribute / module container), a fresh allocation.
T, D, A, S, F = "tensor", "data", "alias", "state", "fresh"
EMPTY: Kinds = frozenset()
INPUT: Kinds = frozenset({T, D, A})


def _names(text: str, prefix: str = "") -> frozenset[str]:
    return frozenset(prefix + word for word in text.split())


# Allocation / view / copy / metadata calls allowed in strict mode; every other torch.* call computes.
_TORCH_FRESH = _names(
    "empty empty_like empty_strided zeros zeros_like ones ones_like full full_like arange", "torch."
)
_TORCH_VIEWS = _names(
    "reshape permute transpose t flatten unsqueeze squeeze narrow chunk split unbind as_strided", "torch."
)
_TORCH_OK = (
    _TORCH_FRESH
    | _TORCH_VIEWS
    | _names(
        "tensor as_tensor clone numel Size device dtype finfo iinfo is_tensor is_floating_point is_grad_enabled "
        "broadcast_shapes result_type promote_types get_default_dtype no_grad inference_mode enable_grad "
        "cuda.synchronize cuda.current_device cuda.current_stream cuda.default_stream cuda.is_available "
        "cuda.device cuda.device_count cuda.get_device_properties cuda.get_device_capability cuda.get_device_name "
        "nn.Parameter nn.Buffer nn.Module nn.ModuleList nn.ModuleDict nn.ParameterList nn.ParameterDict",
        "torch.",
    )
)
_META_METHODS = _names(
    "size stride numel nelement dim ndimension is_contiguous data_ptr element_size storage_offset get_device "
    "is_floating_point untyped_storage"
)
_ALIAS_METHODS = _names(
    "view view_as reshape reshape_as contiguous permute transpose t expand expand_as unsqueeze squeeze flatten "
    "unflatten movedim chunk split unbind narrow as_strided select detach to cuda cpu float half bfloat16 double "
    "int long bool type requires_grad_ copy_ zero_ fill_"
)
_NEW_METHODS = _names("new_empty new_zeros new_ones new_full")
_TENSOR_METHODS_OK = _META_METHODS | _ALIAS_METHODS | _NEW_METHODS | _names("clone item tolist new_tensor")
_COMPUTE_METHODS = _names(
    "matmul mm bmm mv dot einsum softmax log_softmax relu gelu silu sigmoid tanh exp exp2 expm1 log log2 log1p sqrt "
    "rsqrt sum mean var std amax amin max min argmax argmin cumsum cumprod prod norm abs neg pow mul div sub addmm "
    "baddbmm addcmul addcdiv clamp clamp_min clamp_max clip where masked_fill layer_norm group_norm conv1d conv2d "
    "conv3d linear lerp sin cos erf floor ceil round square reciprocal logsumexp topk scatter gather index_select"
)
_MUTATORS = _names("append extend insert update setdefault add __setitem__ appendleft put")
_CONTAINER_READS = _names("get pop setdefault values items keys __getitem__")
_META_ATTRS = _names("shape dtype device ndim is_cuda layout itemsize nbytes requires_grad")
_PTR_KEYS = _names("data_ptr id hash untyped_storage storage _cdata")
_COMPILED = _names("cutlass.cute.compile triton.compile")
_TRITON_JIT = _names("triton.jit triton.runtime.jit.jit triton.runtime.jit")
_CUTE_DECORATORS = _names("cutlass.cute.kernel cutlass.cute.jit")

# Resolved-name prefixes -> (code, why). Checked on imports and on every maximal Name/Attribute chain.
_NAME_RULES: tuple[tuple[frozenset[str], str, str], ...] = (
    (
        _names("torch.compile torch.jit torch._dynamo torch._inductor torch.export torch.fx"),
        "torch_compile",
        "uses the PyTorch compiler, which hides the work the kernel must do",
    ),
    (
        _names(
            "torch.cuda.Stream torch.cuda.stream torch.cuda.set_stream torch.cuda.Event torch.cuda.ExternalStream "
            "torch.cuda.StreamContext torch.cuda.streams torch.Stream torch.Event"
        ),
        "side_stream",
        "creates or switches CUDA streams/events; work must run on the current stream",
    ),
    (
        _names(
            "threading _thread multiprocessing concurrent asyncio subprocess signal pty sched torch.multiprocessing "
            "torch.futures os.fork os.forkpty os.system os.popen os.posix_spawn os.posix_spawnp os.kill os.spawnl "
            "os.spawnle os.spawnlp os.spawnlpe os.spawnv os.spawnve os.spawnvp os.spawnvpe os.execl os.execle "
            "os.execlp os.execlpe os.execv os.execve os.execvp os.execvpe"
        ),
        "thread_spawn",
        "starts threads, processes or async work",
    ),
    (
        _names(
            "ctypes _ctypes cffi gc inspect traceback dis sys._getframe sys.settrace sys.setprofile sys.modules "
            "sys._current_frames"
        ),
        "introspection",
        "inspects or manipulates the interpreter",
    ),
    (_names("builtins unittest.mock mock contextvars"), "patching", "can patch the harness's functions"),
    (
        _names(
            "importlib runpy pickle marshal code codeop dill cloudpickle types.FunctionType types.CodeType "
            "types.ModuleType torch.utils.cpp_extension cupy numba pycuda"
        ),
        "dynamic_code",
        "builds or loads code at run time (or kernels outside the chosen backend)",
    ),
    (
        _names(
            "reference __main__ kernelevolve io pathlib shutil tempfile glob socket urllib http requests os.open "
            "os.read os.listdir os.scandir os.walk torch.load torch.save numpy.load"
        ),
        "reference_access",
        "reads files, the reference or the harness",
    ),
    (
        _names(
            "torch.utils._python_dispatch torch.overrides torch.Tensor._make_subclass torch.Tensor.as_subclass"
        ),
        "lazy_result",
        "makes tensor subclasses whose work can be deferred",
    ),
    (_names("contextlib.suppress"), "try_except_fallback", "suppresses failures of the kernel work"),
)
_GRAPH_NAMES = _names(
    "torch.cuda.CUDAGraph torch.cuda.graph torch.cuda.graphs torch.cuda.make_graphed_callables"
)
_GLOBAL_STATE_CALLS = _names(
    "torch.manual_seed torch.seed torch.set_rng_state torch.random torch.cuda.manual_seed torch.cuda.manual_seed_all "
    "torch.cuda.set_rng_state torch.set_default_dtype torch.set_default_device torch.set_default_tensor_type "
    "torch.set_float32_matmul_precision torch.set_flush_denormal torch.use_deterministic_algorithms "
    "torch.set_deterministic_debug_mode torch.set_num_threads torch.set_num_interop_threads torch.cuda.set_device "
    "numpy.random.seed random.seed"
)
_BUILTIN_RULES = {
    "exec": ("dynamic_code", "exec runs code built at run time"),
    "eval": ("dynamic_code", "eval runs code built at run time"),
    "compile": ("dynamic_code", "compile builds code at run time"),
    "__import__": ("dynamic_code", "__import__ loads modules dynamically"),
    "open": ("reference_access", "open reads or writes files"),
    "globals": ("introspection", "globals() reaches module state by name"),
    "locals": ("introspection", "locals() reaches frame state by name"),
    "vars": ("introspection", "vars() reaches object/module state by name"),
    "__builtins__": ("patching", "__builtins__ can patch builtins"),
    "Model": ("reference_access", "uses the reference Model; compute the result in your own kernel"),
    "get_inputs": ("reference_access", "uses the reference's get_inputs"),
    "get_init_inputs": ("reference_access", "uses the reference's get_init_inputs"),
}
_FRAME_ATTRS = _names(
    "f_back f_locals f_globals f_code tb_frame gi_frame cr_frame __globals__ __closure__ __code__ "
    "__subclasses__"
)


_MEMOIZERS = _names("functools.lru_cache functools.cache")


def _matches(name: str, prefixes: frozenset[str]) -> bool:
    """Whether a dotted name is one of `prefixes` or lies under one of them."""
    parts = name.split(".")
    return any(".".join(parts[:i]) in prefixes for i in range(1, len(parts) + 1))


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


def check_source(source: str, backend: str, strict: bool) -> list[StaticIssue]:
    """All static issues of a candidate source, sorted by line; empty means it may run."""
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
    checker = _Checker(tree, backend, strict)
    try:
        checker.run()
    except RecursionError:  # e.g. a generated expression thousands of terms deep
        return [StaticIssue("too_complex", "the source is nested too deeply for the static checks")]
    return sorted(checker.issues.values(), key=lambda i: (i.line, i.code, i.message))


class _Module:
    """Import aliases, top-level definitions and kernels of one candidate module."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.aliases[a.asname or a.name.split(".")[0]] = (
                        a.name if a.asname else a.name.split(".")[0]
                    )
            elif isinstance(node, ast.ImportFrom):
                base = "." * node.level + (node.module or "")
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{base}.{a.name}"
        for stmt in tree.body:  # module-level aliases of library names: `Event = torch.cuda.Event`
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, (ast.Name, ast.Attribute)):
                target = self.resolve(stmt.value)
                for t in stmt.targets:
                    if target and isinstance(t, ast.Name):
                        self.aliases[t.id] = target
        self.functions = {
            n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self.containers: set[str] = set()
        self.triton_kernels: set[str] = set()
        self.cute_funcs: set[str] = set()
        self.device_defs: set[int] = set()  # id() of kernel bodies: device code, not PyTorch host code
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(self._mentions(d, _TRITON_JIT) for d in node.decorator_list):
                    self.triton_kernels.add(node.name)
                    self.device_defs.add(id(node))
                if any(self._mentions(d, _CUTE_DECORATORS) for d in node.decorator_list):
                    self.cute_funcs.add(node.name)
                    self.device_defs.add(id(node))
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign):
                names = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
                if self._mentions(stmt.value, _TRITON_JIT):
                    self.triton_kernels.update(names)
                elif isinstance(stmt.value, (ast.Dict, ast.List, ast.Set)) or (
                    isinstance(stmt.value, ast.Call)
                    and isinstance(stmt.value.func, (ast.Name, ast.Attribute))
                    and (getattr(stmt.value.func, "id", "") or getattr(stmt.value.func, "attr", ""))
                    in ("dict", "list", "set", "defaultdict", "OrderedDict", "deque")
                ):
                    self.containers.update(names)

    def resolve(self, node: ast.AST) -> str | None:
        """Dotted name of an import-rooted Name/Attribute chain (getattr with a constant counts)."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            base = self.resolve(node.args[0])
            return f"{base}.{node.args[1].value}" if base else None
        return None

    def _mentions(self, node: ast.AST, names: frozenset[str]) -> bool:
        return any(
            self.resolve(n) in names for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute))
        )

    def class_methods(self, cls: str, seen: frozenset[str] = frozenset()) -> dict[str, ast.FunctionDef]:
        """Methods of a module-level class, including those inherited from module-level bases."""
        node = self.classes.get(cls)
        if node is None or cls in seen:
            return {}
        methods: dict[str, ast.FunctionDef] = {}
        for base in reversed(node.bases):
            if isinstance(base, ast.Name):
                methods.update(self.class_methods(base.id, seen | {cls}))
        methods.update({n.name: n for n in node.body if isinstance(n, ast.FunctionDef)})  # type: ignore[misc]
        return methods


def _is_static(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)


def _positional(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    return [a.arg for a in (*node.args.posonlyargs, *node.args.args)]


def _callee_name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else ""


class _Checker:
    """Runs the whole-module rules, then the call-path analysis from ModelNew.forward."""

    def __init__(self, tree: ast.Module, backend: str, strict: bool) -> None:
        self.mod = _Module(tree)
        self.backend = backend
        self.strict = strict
        self.issues: dict[tuple[str, int], StaticIssue] = {}
        self.parents = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
        self.module_names = {
            t.id
            for s in tree.body
            if isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign))
            for t in ast.walk(s)
            if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)
        }
        self.persistent_names = self.module_names | set(self.mod.functions) | set(self.mod.classes)
        self.units: dict[str, tuple[ast.FunctionDef | ast.AsyncFunctionDef, str | None]] = {}
        self.params: dict[str, dict[str, Kinds]] = {}
        self.summaries: dict[str, Kinds] = {}
        self.changed = False
        self.launches = 0
        self.cute_used = False
        self.tensor_attrs: dict[str, set[str]] = {}
        self.local_attrs: dict[str, dict[str, str]] = {}
        self.torch_modules: dict[str, set[str]] = {}
        self.torch_using: set[str] = set()

    def issue(self, code: str, node: ast.AST, message: str) -> None:
        line = int(getattr(node, "lineno", 0))
        self.issues.setdefault((code, line), StaticIssue(code, message, line))

    def run(self) -> None:
        self._name_rules()
        if self.strict:
            self._module_level_compute()
        model = self.mod.classes.get("ModelNew")
        methods = self.mod.class_methods("ModelNew")
        if model is None or "forward" not in methods:
            where: ast.AST = model if model is not None else self.mod.tree
            self.issue(
                "missing_model_new",
                where,
                "the candidate must define class ModelNew(nn.Module) with a forward method",
            )
            return
        self._collect_attrs()
        self._collect_torch_using()
        forward = methods["forward"]
        scalar = ("int", "float", "bool", "str")
        self.params["ModelNew.forward"] = {
            a.arg: frozenset({D})
            if isinstance(a.annotation, ast.Name) and a.annotation.id in scalar
            else INPUT
            for a in (*forward.args.posonlyargs, *forward.args.args[1:], *forward.args.kwonlyargs)
        }
        self.units["ModelNew.forward"] = (forward, "ModelNew")
        for _ in range(12):  # kinds only grow, so this reaches a fixpoint quickly
            self.changed = False
            for qual, (node, owner) in list(self.units.items()):
                returned = _Flow(
                    self, node, owner, self.params.get(qual, {}), qual == "ModelNew.forward"
                ).run()
                merged = self.summaries.get(qual, EMPTY) | returned
                if merged != self.summaries.get(qual, EMPTY):
                    self.summaries[qual] = merged
                    self.changed = True
            if not self.changed:
                break
        self._backend_check(model, methods)

    # ---- whole-module rules -------------------------------------------------------------------

    def _rule(self, node: ast.AST, name: str) -> None:
        for prefixes, code, why in _NAME_RULES:
            if _matches(name, prefixes):
                self.issue(code, node, f"{name}: {why}")
        if name.startswith("torch._") and not _matches(name, _NAME_RULES[0][0]):
            self.issue("introspection", node, f"{name}: private PyTorch internals")
        if _matches(name, _GLOBAL_STATE_CALLS):
            self.issue("patching", node, f"{name} changes process-wide state the harness relies on")
        if self.strict and _matches(name, _GRAPH_NAMES):
            self.issue("cuda_graph", node, f"{name}: CUDA graphs are not allowed in strict mode")

    def _name_rules(self) -> None:
        mod = self.mod
        defined = set(mod.functions) | set(mod.classes) | self.module_names
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self._rule(node, a.name)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    self.issue(
                        "reference_access", node, "relative import: the candidate must be self-contained"
                    )
                for a in node.names:
                    self._rule(node, f"{node.module}.{a.name}" if node.module else a.name)
            elif isinstance(node, ast.ClassDef):
                if any(
                    self.mod.resolve(b) in ("torch.Tensor", "torch._C.TensorBase") for b in node.bases
                ) or any(
                    isinstance(n, ast.FunctionDef) and n.name in ("__torch_function__", "__torch_dispatch__")
                    for n in node.body
                ):
                    self.issue(
                        "lazy_result",
                        node,
                        f"class {node.name} is a tensor subclass / torch function override",
                    )
            elif isinstance(node, (ast.Name, ast.Attribute)):
                self._reference(node, defined)
            elif isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
                if mod.resolve(node.value):
                    self.issue("patching", node, f"stores into {mod.resolve(node.value)}")
            elif isinstance(node, ast.Call):
                self._call_rules(node)

    def _reference(self, node: ast.Name | ast.Attribute, defined: set[str]) -> None:
        parent = self.parents.get(id(node))
        maximal = not (isinstance(parent, ast.Attribute) and parent.value is node)
        name = self.mod.resolve(node)
        if name and maximal:
            self._rule(node, name)
        if isinstance(node, ast.Attribute):
            if not isinstance(node.ctx, ast.Load) and self.mod.resolve(node.value):
                self.issue("patching", node, f"assigns to {name}: candidates may not patch modules")
            if node.attr == "__dict__" and self.mod.resolve(node.value):
                self.issue("patching", node, f"{name} exposes a module's namespace")
            if node.attr in _FRAME_ATTRS:
                self.issue("introspection", node, f".{node.attr} walks frames or code objects")
            if node.attr in ("Model", "get_inputs", "get_init_inputs"):
                self.issue("reference_access", node, f".{node.attr} reaches for the reference")
            if node.attr in ("as_subclass", "_make_subclass") or (
                node.attr == "__class__" and not isinstance(node.ctx, ast.Load)
            ):
                self.issue("lazy_result", node, f".{node.attr} makes a tensor subclass")
        elif (
            name is None
            and isinstance(node.ctx, ast.Load)
            and node.id in _BUILTIN_RULES
            and (node.id in ("Model", "get_inputs", "get_init_inputs") or node.id not in defined)
        ):
            code, why = _BUILTIN_RULES[node.id]
            self.issue(code, node, f"{node.id}: {why}")

    def _call_rules(self, node: ast.Call) -> None:
        func, mod = node.func, self.mod
        resolved = mod.resolve(node)  # getattr(module, "name") reads like module.name
        if resolved and isinstance(func, ast.Name):
            self._rule(node, resolved)
        if (
            isinstance(func, ast.Name)
            and func.id in ("getattr", "setattr", "delattr", "hasattr")
            and node.args
        ):
            target = mod.resolve(node.args[0])
            const = node.args[1] if len(node.args) > 1 else None
            text = const.value if isinstance(const, ast.Constant) and isinstance(const.value, str) else None
            if func.id in ("setattr", "delattr") and target:
                self.issue("patching", node, f"{func.id} on module {target}")
            if text in ("Model", "get_inputs", "get_init_inputs"):
                self.issue("reference_access", node, f"{func.id}(..., {text!r}) reaches for the reference")
            if func.id == "getattr" and text is None and target and target.split(".")[0] == "torch":
                self.issue("dynamic_code", node, f"getattr on {target} with a computed name")
        elif isinstance(func, ast.Attribute) and func.attr in _MUTATORS and mod.resolve(func.value):
            self.issue("patching", node, f"{mod.resolve(func.value)}.{func.attr}() mutates a module's state")

    def _module_level_compute(self) -> None:
        stmts: list[ast.stmt] = []
        for stmt in self.mod.tree.body:
            stmts.extend(stmt.body if isinstance(stmt, ast.ClassDef) else [stmt])
        for stmt in stmts:
            if not isinstance(
                stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
            ):
                for node, what in self._syntactic_compute(stmt):
                    self.issue("torch_compute_op", node, f"{what} computes in PyTorch at module/class level")

    def _syntactic_compute(self, root: ast.AST) -> Iterable[tuple[ast.AST, str]]:
        for node in ast.walk(root):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                yield node, "the @ operator"
            elif isinstance(node, ast.Call):
                name = self.mod.resolve(node.func)
                if name and name.startswith("torch.") and name not in _TORCH_OK:
                    yield node, f"{name}()"
                elif name is None and isinstance(node.func, ast.Attribute):
                    if node.func.attr.rstrip("_") in _COMPUTE_METHODS:
                        yield node, f".{node.func.attr}()"
                elif isinstance(node.func, ast.Name) and node.func.id == "Model":
                    yield node, "the reference Model"

    # ---- call-path bookkeeping ----------------------------------------------------------------

    def _collect_attrs(self) -> None:
        """Per class: self attributes made in __init__ that hold tensors, local modules or nn layers."""
        for cls in self.mod.classes:
            tensors, local, layers = set(), {}, set()
            init = self.mod.class_methods(cls).get("__init__")
            for node in ast.walk(init) if init else ():
                if (
                    isinstance(node, ast.Call)
                    and _callee_name(node.func) in ("register_buffer", "register_parameter")
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                ):
                    tensors.add(node.args[0].value)
                if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
                    continue
                for target in node.targets:
                    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)):
                        continue
                    callee = self.mod.resolve(node.value.func) or ""
                    if isinstance(node.value.func, ast.Name) and node.value.func.id in self.mod.classes:
                        local[target.attr] = node.value.func.id
                    elif callee in ("torch.nn.Parameter", "torch.nn.Buffer") or (
                        callee.startswith("torch.") and not callee.startswith("torch.nn.")
                    ):
                        tensors.add(target.attr)
                    elif callee.startswith("torch.nn."):
                        layers.add(target.attr)
            self.tensor_attrs[cls], self.local_attrs[cls], self.torch_modules[cls] = tensors, local, layers

    def _collect_torch_using(self) -> None:
        """Local functions/methods that compute in PyTorch, directly or through local calls."""
        bodies: dict[str, tuple[ast.AST, str | None]] = {n: (f, None) for n, f in self.mod.functions.items()}
        for cls in self.mod.classes:
            for name, node in self.mod.class_methods(cls).items():
                bodies[f"{cls}.{name}"] = (node, cls)
        calls: dict[str, set[str]] = {}
        for qual, (body, owner) in bodies.items():
            if id(body) in self.mod.device_defs:
                continue
            if any(True for _ in self._syntactic_compute(body)):
                self.torch_using.add(qual)
            callees = calls.setdefault(qual, set())
            for n in ast.walk(body):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
                    callees.add(n.func.id)
                elif (
                    isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Attribute)
                    and isinstance(n.func.value, ast.Name)
                ):
                    base = n.func.value.id
                    callees.add(f"{owner if base in ('self', 'cls') else base}.{n.func.attr}")
        grew = True
        while grew:
            grew = False
            for qual, callees in calls.items():
                if qual not in self.torch_using and callees & self.torch_using:
                    self.torch_using.add(qual)
                    grew = True

    def reach(
        self,
        qual: str,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        owner: str | None,
        args: list[Kinds],
        kw: dict[str | None, Kinds],
        skip_first: bool,
    ) -> Kinds:
        """Add a unit to the call path with the kinds its call site passes; return its summary."""
        if id(node) in self.mod.device_defs:
            self.cute_used = self.cute_used or node.name in self.mod.cute_funcs
            return EMPTY
        passed = frozenset().union(*args, *kw.values())
        if passed & {T, D, A} and any(
            self.mod.resolve(d.func if isinstance(d, ast.Call) else d) in _MEMOIZERS
            for d in node.decorator_list
        ):
            self.issue("state_between_calls", node, f"{node.name} memoizes results of calls that get tensors")
        names = _positional(node)[1 if skip_first and not _is_static(node) else 0 :]
        current = self.params.get(qual, {})
        merged = dict(current)
        for name, kinds in [*zip(names, args, strict=False), *kw.items()]:
            if name is not None:
                merged[name] = merged.get(name, EMPTY) | kinds
        if qual not in self.units or merged != current:
            self.units[qual] = (node, owner)
            self.params[qual] = merged
            self.changed = True
        return self.summaries.get(qual, EMPTY)

    def reach_method(
        self, cls: str, name: str, args: list[Kinds], kw: dict[str | None, Kinds], skip_first: bool = True
    ) -> Kinds:
        node = self.mod.class_methods(cls).get(name)
        if node is None and name == "forward":
            node = self.mod.class_methods(cls).get("__call__")
        return self.reach(f"{cls}.{node.name}", node, cls, args, kw, skip_first) if node else EMPTY

    def reach_class(
        self, cls: str, args: list[Kinds], kw: dict[str | None, Kinds], instantiated: bool
    ) -> None:
        for name in self.mod.class_methods(cls):
            if name != "__init__" or instantiated:
                self.reach_method(
                    cls, name, args if name == "__init__" else [], kw if name == "__init__" else {}
                )

    def _backend_check(self, model: ast.ClassDef, methods: dict[str, ast.FunctionDef]) -> None:
        if self.backend == "triton":
            if self.launches:
                return
            kernels = ", ".join(sorted(self.mod.triton_kernels))
            message = (
                f"ModelNew.forward never launches its @triton.jit kernel(s) ({kernels}) as kernel[grid](...)"
                if kernels
                else "no @triton.jit kernel: the work must be done by a Triton kernel launched from ModelNew.forward"
            )
            self.issue("no_backend_kernel", model, message)
            return
        init = methods.get("__init__")
        for node in ast.walk(init) if init else ():
            if _callee_name(node) in self.mod.cute_funcs:
                self.cute_used = True
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in self.mod.classes
            ):
                self.reach_class(node.func.id, [], {}, instantiated=False)
        if not self.cute_used:
            self.issue(
                "no_backend_kernel", model, "no @cute.kernel / @cute.jit function is used from ModelNew"
            )


class _Flow:
    """One source-ordered pass over a call-path function, tracking what each local name may hold."""

    def __init__(
        self,
        checker: _Checker,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        owner: str | None,
        params: dict[str, Kinds],
        is_forward: bool,
    ) -> None:
        self.c, self.mod, self.node, self.owner, self.is_forward = (
            checker,
            checker.mod,
            node,
            owner,
            is_forward,
        )
        positional = _positional(node)
        self.self_name = positional[0] if owner and positional and not _is_static(node) else None
        self.is_init = node.name == "__init__"
        every_arg = [*positional, *(a.arg for a in node.args.kwonlyargs)]
        every_arg += [a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None]
        self.env: dict[str, Kinds] = {
            name: params.get(name, EMPTY) for name in every_arg if name != self.self_name
        }
        self.returns = EMPTY
        self.returned: set[str] = set()
        self.stored: dict[str, ast.AST] = {}
        self.compute_events = 0
        self.local_calls = 0

    def run(self) -> Kinds:
        for default in [*self.node.args.defaults, *self.node.args.kw_defaults]:
            if isinstance(default, (ast.Dict, ast.List, ast.Set)) or (
                isinstance(default, ast.Call) and _callee_name(default.func) in ("dict", "list", "set")
            ):
                self.c.issue(
                    "state_between_calls",
                    default,
                    f"{self.node.name}: a mutable default argument keeps state between calls",
                )
        self._block(self.node.body)
        if self.is_forward:
            for name in sorted(self.returned & set(self.stored)):
                self.c.issue(
                    "state_between_calls",
                    self.stored[name],
                    f"forward keeps its output {name!r} for later calls",
                )
        return self.returns

    def compute(self, node: ast.AST, what: str) -> None:
        self.compute_events += 1
        if self.c.strict:
            self.c.issue(
                "torch_compute_op",
                node,
                f"{what} computes in PyTorch on ModelNew's call path; strict mode needs the work in the {self.c.backend} kernel",
            )

    def _is_self(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and self.self_name is not None and node.id == self.self_name

    # ---- statements ---------------------------------------------------------------------------

    def _block(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            self._stmt(stmt)

    def _stmt(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Assign):
            kinds = self.kinds(s.value)
            for target in s.targets:
                self._bind(target, kinds, s.value, s)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self._bind(s.target, self.kinds(s.value), s.value, s)
        elif isinstance(s, ast.AugAssign):
            value, current = self.kinds(s.value), self.kinds(s.target)
            if isinstance(s.op, ast.MatMult) or T in value | current:
                self.compute(s, "in-place tensor arithmetic")
            self._bind(s.target, (current | value) - {F}, s.value, s)
        elif isinstance(s, ast.Return):
            self._return(s)
        elif isinstance(s, (ast.Expr, ast.Assert, ast.Raise)):
            for child in ast.iter_child_nodes(s):
                self.kinds(child)
        elif isinstance(s, (ast.If, ast.While)):
            self.kinds(s.test)
            self._block(s.body)
            self._block(s.orelse)
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            self._bind(s.target, self.kinds(s.iter), None, s)
            self._block(s.body)
            self._block(s.orelse)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            for item in s.items:
                kinds = self.kinds(item.context_expr)
                if item.optional_vars is not None:
                    self._bind(item.optional_vars, kinds, None, s)
            self._block(s.body)
        elif isinstance(s, ast.Try) or type(s).__name__ == "TryStar":
            self._try(s)  # type: ignore[arg-type]
        elif isinstance(s, ast.Global):
            if not self.is_init:
                self.c.issue(
                    "state_between_calls",
                    s,
                    f"global {', '.join(s.names)}: module state rebound from the call path",
                )
        elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if id(s) not in self.mod.device_defs:
                saved = dict(self.env)
                self.env.update({a: EMPTY for a in _positional(s)})
                self._block(s.body)
                self.env = saved
        elif isinstance(s, ast.Match):
            self.kinds(s.subject)
            for case in s.cases:
                self._block(case.body)

    def _return(self, s: ast.Return) -> None:
        if s.value is None:
            return
        kinds = self.kinds(s.value)
        self.returns |= kinds
        if not self.is_forward:
            return
        parts = s.value.elts if isinstance(s.value, (ast.Tuple, ast.List)) else [s.value]
        self.returned.update(p.id for p in parts if isinstance(p, ast.Name))
        if A in kinds:
            self.c.issue(
                "returns_input", s, "forward returns one of its inputs (or a view of it); return a new tensor"
            )
        if S in kinds:
            self.c.issue(
                "state_between_calls",
                s,
                "forward returns a tensor kept between calls (on self or in a module-level container); "
                "allocate the output afresh on every call",
            )

    def _try(self, s: ast.Try) -> None:
        launches, local_calls = self.c.launches, self.local_calls
        self._block(s.body)
        did_work = self.c.launches > launches or self.local_calls > local_calls
        for handler in s.handlers:
            if handler.type is None:
                self.c.issue("try_except_fallback", handler, "bare except on ModelNew's call path")
            if handler.name:
                self.env[handler.name] = EMPTY
            before = self.compute_events
            self._block(handler.body)
            if self.compute_events > before:
                self.c.issue(
                    "try_except_fallback", handler, "exception handler falls back to PyTorch / the reference"
                )
            elif did_work and not (handler.body and isinstance(handler.body[-1], ast.Raise)):
                self.c.issue(
                    "try_except_fallback", handler, "exception handler swallows a failure of the kernel work"
                )
        self._block(s.orelse)
        self._block(s.finalbody)

    def _bind(self, target: ast.expr, kinds: Kinds, value: ast.expr | None, stmt: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = kinds
        elif isinstance(target, ast.Starred):
            self._bind(target.value, kinds, None, stmt)
        elif isinstance(target, (ast.Tuple, ast.List)):
            pairs = isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts)
            for i, element in enumerate(target.elts):
                item = value.elts[i] if pairs else None  # type: ignore[union-attr]
                self._bind(element, self.kinds(item) if item is not None else kinds, item, stmt)
        elif isinstance(target, (ast.Attribute, ast.Subscript)):
            keys: list[ast.expr] = []
            root: ast.expr = target
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                if isinstance(root, ast.Subscript):
                    keys.append(root.slice)
                    self.kinds(root.slice)
                root = root.value
            self._store(stmt, root, keys, kinds, [value] if value is not None else [])

    def _store(
        self, at: ast.AST, root: ast.expr, keys: list[ast.expr], kinds: Kinds, values: list[ast.expr]
    ) -> None:
        """A write into something that outlives the call: self (outside __init__) or a module global."""
        if self._is_self(root) and not self.is_init:
            where = "self"
        elif isinstance(root, ast.Name) and root.id not in self.env and root.id in self.c.persistent_names:
            where = f"module-level {root.id}"
        else:
            return
        for key in keys:
            parts = (_callee_name(n.func if isinstance(n, ast.Call) else n) for n in ast.walk(key))
            if any(part in _PTR_KEYS for part in parts):
                self.c.issue(
                    "state_between_calls",
                    at,
                    f"a cache on {where} keyed by data_ptr()/id() carries results between calls",
                )
        if any(self._compiled(v) for v in values):
            return
        if kinds & {D, A}:
            self.c.issue(
                "state_between_calls",
                at,
                f"stores data derived from the inputs on {where}; results may not be carried between calls",
            )
        for value in values:
            if isinstance(value, ast.Name):
                self.stored.setdefault(value.id, at)

    def _compiled(self, value: ast.expr) -> bool:
        """A compiled kernel or launcher: fine to cache on self, whatever the arguments."""
        if not isinstance(value, ast.Call):
            return False
        name = self.mod.resolve(value.func) or ""
        local = _callee_name(value.func)
        return (
            name in _COMPILED
            or name == "functools.partial"
            or local in self.mod.cute_funcs | self.mod.triton_kernels
        )

    # ---- expressions --------------------------------------------------------------------------

    def kinds(self, e: ast.AST | None) -> Kinds:  # noqa: C901 - one dispatch over node types
        if e is None or isinstance(e, ast.Constant):
            return EMPTY
        if isinstance(e, ast.Name):
            return self._name(e)
        if isinstance(e, ast.Attribute):
            return self._attribute(e)
        if isinstance(e, ast.Call):
            return self._call(e)
        if isinstance(e, ast.Subscript):
            self.kinds(e.slice)
            return self.kinds(e.value)
        if isinstance(e, ast.BinOp):
            both = self.kinds(e.left) | self.kinds(e.right)
            if isinstance(e.op, ast.MatMult):
                self.compute(e, "the @ operator")
            elif T in both:
                self.compute(e, f"tensor arithmetic ({type(e.op).__name__})")
            return (both & {D}) | (both & {T})
        if isinstance(e, ast.UnaryOp):
            operand = self.kinds(e.operand)
            if T in operand and not isinstance(e.op, ast.Not):
                self.compute(e, f"tensor arithmetic ({type(e.op).__name__})")
            return operand & {D, T}
        if isinstance(e, ast.Compare):
            parts = [self.kinds(x) for x in (e.left, *e.comparators)]
            joined = frozenset().union(*parts)
            if T in joined and not all(
                isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in e.ops
            ):
                self.compute(e, "tensor comparison")
            return joined & {D, T}
        if isinstance(e, (ast.BoolOp, ast.Tuple, ast.List, ast.Set)):
            items = e.values if isinstance(e, ast.BoolOp) else e.elts
            return frozenset().union(*(self.kinds(x) for x in items))
        if isinstance(e, ast.Dict):
            for key in e.keys:
                self.kinds(key)
            return frozenset().union(*(self.kinds(v) for v in e.values))
        if isinstance(e, ast.IfExp):
            self.kinds(e.test)
            return self.kinds(e.body) | self.kinds(e.orelse)
        if isinstance(e, ast.NamedExpr):
            kinds = self.kinds(e.value)
            self.env[e.target.id] = kinds
            return kinds
        if isinstance(e, ast.Lambda):
            saved = dict(self.env)
            self.env.update({a.arg: EMPTY for a in (*e.args.posonlyargs, *e.args.args, *e.args.kwonlyargs)})
            self.kinds(e.body)
            self.env = saved
            return EMPTY
        if isinstance(e, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            for gen in e.generators:
                self._bind(gen.target, self.kinds(gen.iter), None, ast.Pass())
                for cond in gen.ifs:
                    self.kinds(cond)
            if isinstance(e, ast.DictComp):
                return self.kinds(e.key) | self.kinds(e.value)
            return self.kinds(e.elt)
        if isinstance(e, (ast.Starred, ast.Await, ast.Yield, ast.YieldFrom)):
            return self.kinds(e.value)
        for child in ast.iter_child_nodes(e):
            self.kinds(child)
        return EMPTY

    def _name(self, e: ast.Name) -> Kinds:
        if e.id in self.env:
            return self.env[e.id]
        if e.id == "Model":
            self.compute(e, "the reference Model")
        elif e.id in self.mod.cute_funcs:
            self.c.cute_used = True
        elif e.id in self.mod.functions:  # passed as a callback: still on the call path
            self.c.reach(e.id, self.mod.functions[e.id], None, [], {}, False)
        elif e.id in self.mod.classes and e.id != "ModelNew":
            self.c.reach_class(e.id, [], {}, instantiated=False)
        return frozenset({S}) if e.id in self.mod.containers else EMPTY

    def _attribute(self, e: ast.Attribute) -> Kinds:
        if self._is_self(e.value) and self.owner is not None:
            methods = self.mod.class_methods(self.owner)
            if e.attr in methods:
                self.c.reach_method(self.owner, e.attr, [], {})
                return EMPTY
            if e.attr in self.c.local_attrs.get(self.owner, {}):
                self.c.reach_class(self.c.local_attrs[self.owner][e.attr], [], {}, instantiated=False)
            return frozenset({S, T}) if e.attr in self.c.tensor_attrs.get(self.owner, ()) else frozenset({S})
        if e.attr in _META_ATTRS or self.mod.resolve(e) is not None:
            return EMPTY
        value = self.kinds(e.value)
        if e.attr in ("T", "mT", "H", "mH", "data", "real", "imag"):
            return value
        if e.attr in ("weight", "bias"):
            return (value & {S}) | {T}
        return value & {S, D}

    def _call(self, e: ast.Call) -> Kinds:
        func = e.func
        args = [self.kinds(a) for a in e.args]
        kw = {k.arg: self.kinds(k.value) for k in e.keywords}
        every = frozenset().union(*args, *kw.values())
        if isinstance(func, ast.Subscript):
            self.kinds(func.slice)
            if _callee_name(func.value) in self.mod.triton_kernels:
                self.c.launches += 1
                return EMPTY
            return (self.kinds(func.value) | every) & {D}
        name = self.mod.resolve(func)
        if name is not None:
            return self._library_call(e, name, args, every)
        if isinstance(func, ast.Name):
            return self._local_call(e, func.id, args, kw, every)
        if isinstance(func, ast.Attribute):
            recv = func.value
            if self._is_self(recv) and self.owner is not None:
                return self._self_call(e, func.attr, args, kw, every)
            if isinstance(recv, ast.Name) and recv.id in self.mod.classes and recv.id not in self.env:
                method = "forward" if func.attr == "apply" else func.attr
                return self._local(
                    self.c.reach_method(recv.id, method, args, kw, skip_first=func.attr == "apply"),
                    f"{recv.id}.{method}",
                )
            if isinstance(recv, ast.Attribute) and self._is_self(recv.value) and self.owner is not None:
                cls = self.c.local_attrs.get(self.owner, {}).get(recv.attr)
                if cls is not None:
                    return self._local(self.c.reach_method(cls, func.attr, args, kw), f"{cls}.{func.attr}")
            return self._method_call(e, func.attr, recv, self.kinds(recv), args, every)
        self.kinds(func)
        return every & {D}

    def _local(self, summary: Kinds, qual: str) -> Kinds:
        self.local_calls += 1
        if qual in self.c.torch_using:
            self.compute_events += 1  # the callee's own PyTorch calls are reported where they are
        return summary

    def _library_call(self, e: ast.Call, name: str, args: list[Kinds], every: Kinds) -> Kinds:
        if not name.startswith("torch."):
            return every & {D}
        if name in _TORCH_FRESH:
            return frozenset({T, F})
        if name in _TORCH_VIEWS:
            return args[0] if args else EMPTY
        if name in ("torch.clone", "torch.tensor", "torch.as_tensor"):
            return (every - {F}) | {T}
        if name in _TORCH_OK:
            return EMPTY
        self.compute(e, f"{name}()")
        return (every & {D}) | {T}

    def _local_call(
        self, e: ast.Call, fname: str, args: list[Kinds], kw: dict[str | None, Kinds], every: Kinds
    ) -> Kinds:
        if fname in self.env:
            return every & {D}
        if fname in self.mod.cute_funcs:
            self.c.cute_used = True
            return EMPTY
        if fname in self.mod.functions:
            return self._local(self.c.reach(fname, self.mod.functions[fname], None, args, kw, False), fname)
        if fname in self.mod.classes:
            self.c.reach_class(fname, args, kw, instantiated=True)
            return EMPTY
        if fname == "Model":
            self.compute(e, "the reference Model")
            return frozenset({T})
        if fname in ("sum", "max", "min", "abs", "pow", "round", "sorted", "divmod") and T in every:
            self.compute(e, f"{fname}() on a tensor")
        if fname == "setattr" and len(e.args) >= 3 and self._is_self(e.args[0]):
            self._store(e, e.args[0], [], args[2], [e.args[2]])
        if fname == "getattr" and e.args and self._is_self(e.args[0]):
            return frozenset({S})
        if fname in ("tuple", "list", "set", "dict", "zip", "enumerate", "reversed", "iter", "next"):
            return every - {F}
        if fname in (
            "len",
            "isinstance",
            "issubclass",
            "range",
            "print",
            "type",
            "hasattr",
            "callable",
            "id",
            "hash",
        ):
            return EMPTY
        return every & {D}

    def _self_call(
        self, e: ast.Call, attr: str, args: list[Kinds], kw: dict[str | None, Kinds], every: Kinds
    ) -> Kinds:
        owner = self.owner or ""
        if attr in self.mod.class_methods(owner):
            return self._local(self.c.reach_method(owner, attr, args, kw), f"{owner}.{attr}")
        cls = self.c.local_attrs.get(owner, {}).get(attr)
        if cls is not None:
            return self._local(self.c.reach_method(cls, "forward", args, kw), f"{cls}.forward")
        if attr in self.c.torch_modules.get(owner, ()):
            self.compute(e, f"self.{attr}(...) (a torch.nn layer)")
            return (every & {D}) | {T}
        return every & {D}

    def _method_call(
        self, e: ast.Call, attr: str, recv: ast.expr, rk: Kinds, args: list[Kinds], every: Kinds
    ) -> Kinds:
        if attr in _MUTATORS:
            keys = e.args[:1] if attr in ("setdefault", "__setitem__") else []
            values = e.args[1:] if keys else list(e.args)
            for arg in e.args:
                if isinstance(arg, ast.Dict):
                    keys += [k for k in arg.keys if k is not None]
                    values += arg.values
            root: ast.expr = recv
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            value_kinds = frozenset().union(*(self.kinds(v) for v in values))
            self._store(e, root, keys, value_kinds, values)
        if T in rk:
            if attr in _META_METHODS:
                return EMPTY
            if attr in _ALIAS_METHODS:
                return rk
            if attr in _NEW_METHODS:
                return frozenset({T, F})
            if attr == "clone":
                return rk - {A, F}
            if attr in ("item", "tolist"):
                return rk & {D}
            if attr not in _TENSOR_METHODS_OK:
                self.compute(e, f".{attr}() on a tensor")
            return ((rk | every) & {D}) | {T}
        if attr.rstrip("_") in _COMPUTE_METHODS:
            self.compute(e, f".{attr}()")
            return ((rk | every) & {D}) | {T}
        if attr in _CONTAINER_READS:
            return rk & {S, D, A, T}
        if attr in _META_METHODS:
            return EMPTY
        return rk if attr in _ALIAS_METHODS else (rk | every) & {D}
