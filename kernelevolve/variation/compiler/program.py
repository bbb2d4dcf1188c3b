"""Inductor's generated wrapper module split into Triton kernels and host steps.

Only what a standalone candidate can reproduce is accepted: kernels of the pointwise, reduction and
persistent-reduction kinds whose grid follows the plain `tl.program_id(k) * BLOCK` pattern, and host
steps made of allocations, views, kernel launches and known library calls. Anything else raises
`Unsupported` with the reason, and the operator proposes nothing for that shape.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from kernelevolve.variation.compiler.own_conv import CONVOLUTION, conv_substitutable

SUPPORTED_KINDS = ("pointwise", "reduction", "persistent_reduction")  # scans are reductions here
# Inductor's extern kernels and the torch function that does the same (library work: permissive mode).
EXTERN_TO_TORCH = {
    "mm": "torch.mm",
    "bmm": "torch.bmm",
    "addmm": "torch.addmm",
    "baddbmm": "torch.baddbmm",
    "convolution": CONVOLUTION,
}
# Inductor's fallback (extern) ops: `aten.mm.default`, or any namespace spelled in full
# (`torch.ops.aten._scaled_dot_product_efficient_attention.default`, `torch.ops.higher_order...`).
LIBRARY_OP_PREFIXES = ("aten.", "torch.ops.")
# `.to(tl.int64)`: Inductor's form for grids whose offsets pass 2**31 (L1/87: 16x128x1024x1024 outputs)
_INT64 = r"(?:\.to\(tl\.int64\))?"
_AXIS = re.compile(rf"\b([xyz])offset = tl\.program_id\((\d)\){_INT64} \* ([XYZ]BLOCK)")
_AXIS_OVERFLOW = re.compile(
    rf"\b([xyz])offset = \(tl\.program_id\((\d)\){_INT64} \+ tl\.program_id\((\d)\){_INT64} \* "
    rf"tl\.num_programs\(\d\){_INT64}\){_INT64} \* ([XYZ]BLOCK)"
)
_UNMASKED = re.compile(r"\b(x|y|z|r0_|r1_)mask = tl\.full\(\[")


class Unsupported(Exception):
    """Generated code this translation does not handle."""


@dataclass(frozen=True)
class Axis:
    prefix: str  # "x", "y", "z"
    program_axis: int
    block: str  # "XBLOCK", ...
    overflow_axis: int | None = None  # the grid axis that carries the excess over 65535 blocks


@dataclass(frozen=True)
class Kernel:
    name: str
    kind: str
    source: str  # "@triton.jit\ndef ...": Inductor's heuristics decorator removed
    params: tuple[str, ...]  # runtime parameters, in order
    blocks: tuple[str, ...]  # constexpr block-size parameters (XBLOCK, R0_BLOCK, ...)
    axes: tuple[Axis, ...]
    numels: dict[str, int] = field(default_factory=dict)  # "x" / "y" / "r0_" -> size written in the body
    unmasked: frozenset[str] = frozenset()  # prefixes with no bounds mask: their block must divide the size
    fixed_blocks: dict[str, int] = field(default_factory=dict)  # e.g. R0_BLOCK of a persistent reduction


@dataclass(frozen=True)
class Program:
    kernels: tuple[Kernel, ...]
    arg_names: tuple[str, ...]  # the generated call's arguments, in order
    body: tuple[ast.stmt, ...]  # the call's steps after the argument unpacking, rewritten
    library_calls: tuple[str, ...]  # torch functions used for work (mm, convolution, aten ops)
    layouts: dict[str, tuple[str, str]] = field(default_factory=dict)  # buffer -> (size, stride) asserted
    convolutions_substitutable: bool = True  # every convolution call is one our kernel handles (1-3-D)


def parse(code: str) -> Program:
    tree = ast.parse(code)
    kernels = {k.name: k for k in _kernels(tree)}
    call = _call_function(tree)
    first, *rest = call.body
    if not (
        isinstance(first, ast.Assign)
        and isinstance(first.value, ast.Name)
        and first.value.id == "args"
        and isinstance(first.targets[0], ast.Tuple)
    ):
        raise Unsupported("the generated call does not start by unpacking its arguments")
    arg_names = tuple(ast.unparse(t) for t in first.targets[0].elts)
    rewriter = _HostRewriter(set(kernels))
    body = [s for stmt in rest for s in rewriter.statements(stmt)]
    used = {
        n.id for s in body for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    assigned = {
        n.id for s in body for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    known = (
        set(arg_names) | assigned | {"torch", "aten", "_empty", "_view", "device", "None", "True", "False"}
    )
    known |= {f"_launch_{k}" for k in kernels}
    strangers = sorted(used - known)
    if strangers:
        raise Unsupported(f"host code uses {', '.join(strangers)}")
    launched = [k for k in kernels if f"_launch_{k}" in used]
    return Program(
        tuple(kernels[k] for k in launched),
        arg_names,
        tuple(body),
        tuple(sorted(rewriter.library)),
        rewriter.layouts,
        all(conv_substitutable(c) for c in rewriter.convolutions),
    )


def _kernels(tree: ast.Module) -> list[Kernel]:
    found = []
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) == "async_compile.triton"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            continue
        found.append(_kernel(node.args[1].value))
    return found


def _heuristics_kind(func: ast.FunctionDef) -> str:
    for decorator in func.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        text = ast.unparse(target)
        if text.startswith("triton_heuristics."):
            return text.split(".", 1)[1]
    return ""


def _kernel(source: str) -> Kernel:
    tree = ast.parse(source)
    functions = [s for s in tree.body if isinstance(s, ast.FunctionDef)]
    func = next((f for f in functions if _heuristics_kind(f)), None)
    if func is None:
        raise Unsupported("a generated kernel module without a kernel function")
    kind = _heuristics_kind(func)
    # Other jitted functions in the module (scan combine functions): kept, renamed per kernel.
    helpers = [f for f in functions if f is not func]
    if any(ast.unparse(d) != "triton.jit" for f in helpers for d in f.decorator_list):
        raise Unsupported(f"kernel {func.name}: a helper function that is not plain @triton.jit")
    if kind not in SUPPORTED_KINDS:
        raise Unsupported(f"kernel {func.name}: kind {kind or 'unknown'!r} is not handled")
    blocks = tuple(
        a.arg for a in func.args.args if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)
    )
    params = tuple(a.arg for a in func.args.args if a.arg not in blocks)
    numels: dict[str, int] = {}
    fixed: dict[str, int] = {}
    for stmt in func.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and len(stmt.targets) == 1:
            name = ast.unparse(stmt.targets[0])
            if name.endswith("numel") and isinstance(stmt.value.value, int):
                numels[name[: -len("numel")]] = stmt.value.value
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, int)
        ):
            fixed[ast.unparse(stmt.target)] = stmt.value.value
    text = ast.unparse(func)
    axes = [Axis(p, int(a), b) for p, a, b in _AXIS.findall(text)]
    axes += [Axis(p, int(a), b, int(o)) for p, a, o, b in _AXIS_OVERFLOW.findall(text)]
    # A block is a launch parameter, or fixed in the body: a persistent reduction with one row a program
    # (Inductor's `no_x_dim`: `XBLOCK: tl.constexpr = 1`, large rows on a GPU) launches one program a row.
    if not axes or any(a.block not in blocks and a.block not in fixed for a in axes):
        raise Unsupported(f"kernel {func.name}: its grid does not follow tl.program_id(k) * BLOCK")
    func.decorator_list = [ast.parse("triton.jit", mode="eval").body]
    text = "\n\n\n".join(ast.unparse(f) for f in [*helpers, func])
    for helper in helpers:
        text = re.sub(rf"\b{re.escape(helper.name)}\b", f"{helper.name}_{func.name}", text)
    return Kernel(
        name=func.name,
        kind=kind,
        source=text,
        params=params,
        blocks=blocks,
        axes=tuple(sorted(axes, key=lambda a: a.program_axis)),
        numels=numels,
        unmasked=frozenset(_UNMASKED.findall(text)),
        fixed_blocks=fixed,
    )


def _call_function(tree: ast.Module) -> ast.FunctionDef:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            return node
    raise Unsupported("no call function in the generated module")


class _HostRewriter:
    """The call's statements as a standalone candidate runs them."""

    _DROPPED_CALLS = ("args.clear", "assert_size_stride", "assert_alignment", "torch.cuda.set_device")

    def __init__(self, kernels: set[str]) -> None:
        self.kernels = kernels
        self.library: set[str] = set()
        self.layouts: dict[str, tuple[str, str]] = {}
        self.convolutions: list[ast.Call] = []

    def statements(self, stmt: ast.stmt) -> list[ast.stmt]:
        if isinstance(stmt, ast.With):  # torch.cuda._DeviceGuard(0): our tensors are on one device
            return [s for inner in stmt.body for s in self.statements(inner)]
        if (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Call)
            and ast.unparse(stmt.value.func) in self._DROPPED_CALLS
        ):
            call = stmt.value
            if ast.unparse(call.func) == "assert_size_stride" and len(call.args) >= 3:
                # the layout a library call produced, which the next kernels index with
                self.layouts[ast.unparse(call.args[0])] = (
                    ast.unparse(call.args[1]),
                    ast.unparse(call.args[2]),
                )
            return []
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.value, ast.Call)
            and ast.unparse(stmt.value.func) == "get_raw_stream"
        ):
            return []  # launches go to the current stream
        return [ast.fix_missing_locations(self._rewrite(stmt))]

    def _rewrite(self, stmt: ast.stmt) -> ast.stmt:
        rewriter = self

        class Calls(ast.NodeTransformer):
            def visit_Call(self, node: ast.Call) -> ast.AST:
                self.generic_visit(node)
                func = ast.unparse(node.func)
                if func.endswith(".run") and func[: -len(".run")] in rewriter.kernels:
                    node.func = ast.Name(f"_launch_{func[: -len('.run')]}", ast.Load())
                    node.keywords = [k for k in node.keywords if k.arg != "stream"]
                elif func in ("empty_strided_cuda", "empty_strided_cpu", "empty_strided"):
                    node.func = ast.Name("_empty", ast.Load())
                    node.args = [ast.Name("device", ast.Load()), *node.args]
                elif func == "reinterpret_tensor":
                    return _as_strided(node)
                elif func.startswith("extern_kernels."):
                    target = EXTERN_TO_TORCH.get(func.split(".", 1)[1])
                    if target is None:
                        raise Unsupported(f"library call {func} has no torch equivalent here")
                    rewriter.library.add(target)
                    node.func = ast.parse(target, mode="eval").body
                    if target == CONVOLUTION:
                        rewriter.convolutions.append(node)
                elif func.startswith(LIBRARY_OP_PREFIXES):
                    rewriter.library.add(library_op_name(func))
                return node

        return Calls().visit(stmt)  # type: ignore[no-any-return]


def _as_strided(call: ast.Call) -> ast.expr:
    """`reinterpret_tensor(x, size, stride, offset)` as `x.as_strided(...)` written out, so the static
    checks see a view of `x` itself; through a shared helper, a view of a fresh buffer would count as a
    view of an input wherever the helper also views inputs (they merge what a helper's callers pass)."""
    tensor = call.args[0] if call.args else None
    if len(call.args) != 4 or call.keywords or not isinstance(tensor, ast.Name):
        call.func = ast.Name("_view", ast.Load())
        return call
    size, stride, offset = call.args[1:]
    base = ast.Call(ast.Attribute(ast.Name(tensor.id, ast.Load()), "storage_offset", ast.Load()), [], [])
    start = ast.BinOp(base, ast.Add(), offset)
    return ast.Call(ast.Attribute(tensor, "as_strided", ast.Load()), [size, stride, start], [])


def library_op_name(func: str) -> str:
    """One spelling per op: `aten.x` and `torch.ops.aten.x` are the same call."""
    return func if func.startswith("torch.ops.") else "torch.ops." + func
