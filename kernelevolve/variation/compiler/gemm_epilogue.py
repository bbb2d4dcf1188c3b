"""Inductor's pointwise kernel after one of our GEMMs or convolutions, run on its output tile before it is
stored.

In an own-kernel compiler seed, `_matmul(..., out=buf0)` or `buf0 = _conv(...)` is often followed by the
launch of a pointwise kernel that reads buf0 element by element and writes it back: KernelBench's level-2
epilogues (bias, activations, scaling, residual adds, batch norm in inference). Fusing that kernel into the
GEMM or convolution saves its launch and a read and a write of the whole output.

The kernel's body runs unchanged on a tile: its `xindex` becomes the tile's flat indices into the
contiguous output (so `xindex % N` is still the column), its `xmask` the tile's bounds, and its load of
the GEMM's output at `xindex` becomes the accumulator. A copy of `_ke_matmul_kernel` calls the body;
`_matmul` falls back to launching the kernel after the GEMM when the output is not one contiguous block of
xnumel elements or K is split. A convolution's tile gives each element's offset in its output, which for
a dense output (NCHW, channels-last or any order of its dims) is the flat index the pointwise kernel
walks: copies of both convolution kernels (`_ke_conv_kernel`, `_ke_conv_taps_kernel`) call the body, and
`_conv` launches the kernel after it where the output is not dense or the direct depthwise kernel runs.
Anything else the body does with the output (another index, a reduction, a 2-D tiling) leaves the launch
as it was.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from kernelevolve.variation.compiler.own_conv import CONV_SOURCE
from kernelevolve.variation.compiler.own_gemm import GEMM_SOURCE
from kernelevolve.variation.compiler.program import Kernel, Unsupported

EPILOGUE_SLOTS = 6  # runtime arguments `_ke_matmul_kernel` passes through to an epilogue (e0..e5)
EPILOGUE_TUNABLES = (
    '# GEMM epilogue: "fused" runs the next pointwise kernel on the GEMM\'s tile; "separate" launches it after.',
    'MM_EPILOGUE = "fused"  # tune: "fused", "separate"',
)
CONV_EPILOGUE_TUNABLES = (
    '# convolution epilogue: "fused" runs the next pointwise kernel on the tile; "separate" launches it after.',
    'CONV_EPILOGUE = "fused"  # tune: "fused", "separate"',
)
# the host functions whose kernels can take an epilogue: (their kernels in their source, its placeholder)
_HOSTS = {
    "_matmul": (GEMM_SOURCE, ("_ke_matmul_kernel",), "_ke_epilogue"),
    "_conv": (CONV_SOURCE, ("_ke_conv_kernel", "_ke_conv_taps_kernel"), "_ke_conv_epilogue"),
}
_LANE_NAMES = ("xoffset", "xindex", "xmask")  # defined by the GEMM tile instead
_GRID_NAMES = ("XBLOCK", "xoffset")


@dataclass(frozen=True)
class FusedEpilogue:
    # the copies of the host's kernels (the GEMM's, or both convolution loops') that call it
    host_kernels: tuple[str, ...]
    source: str  # the epilogue function and those copies
    writes_output: bool  # the body stores the host's output itself (Inductor's in_out_ptr)
    host: str = "_matmul"  # the host function: `_matmul` or `_conv`


def fused_epilogue(kernel: Kernel, name: str, output_param: str, host: str = "_matmul") -> FusedEpilogue:
    """The epilogue made of pointwise `kernel` (launched as `name`) whose `output_param` is the output of
    `host` (`_matmul` or `_conv`)."""
    if kernel.kind != "pointwise" or kernel.blocks != ("XBLOCK",) or [a.prefix for a in kernel.axes] != ["x"]:
        raise Unsupported(f"{name}: not a one-axis pointwise kernel")
    if kernel.axes[0].overflow_axis is not None or "xnumel" not in kernel.params:
        raise Unsupported(f"{name}: its grid spans more than one launch axis")
    runtime = [p for p in kernel.params if p != "xnumel"]
    if len(runtime) > EPILOGUE_SLOTS:
        raise Unsupported(f"{name}: {len(runtime)} arguments, more than {EPILOGUE_SLOTS}")
    functions = [s for s in ast.parse(kernel.source).body if isinstance(s, ast.FunctionDef)]
    if len(functions) != 1:
        raise Unsupported(f"{name}: helper functions")
    body = _Body(output_param)
    statements = body.rewrite(functions[0].body)
    function = f"_ke_epilogue_{name}"
    unused = [f"_ke_slot{i}" for i in range(len(runtime), EPILOGUE_SLOTS)]
    header = f"def {function}(value, xindex, xmask, {', '.join([*runtime, *unused])}):"
    lines = [
        "@triton.jit",
        header,
        *("    " + line for s in statements for line in ast.unparse(s).splitlines()),
    ]
    source, originals, placeholder = _HOSTS[host]
    copies = tuple(f"{original}_{name}" for original in originals)
    kernels = [
        _kernel_copy(source, o, c, placeholder, function) for o, c in zip(originals, copies, strict=True)
    ]
    return FusedEpilogue(copies, "\n\n\n".join(["\n".join(lines), *kernels]), body.writes, host)


class _Body(ast.NodeTransformer):
    """A pointwise kernel's statements as the tile's epilogue (raises Unsupported where they cannot be)."""

    def __init__(self, output_param: str) -> None:
        self.output = output_param
        self.lane_aliases = {"xindex"}  # names bound to xindex itself (Inductor's `x2 = xindex`)
        self.writes = False
        self.stored_lanes: list[ast.expr] = []  # `output + xindex` pointers of stores, the one use kept

    def rewrite(self, statements: list[ast.stmt]) -> list[ast.stmt]:
        kept: list[ast.stmt] = []
        for stmt in statements:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue  # docstring
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
            ):
                target = stmt.targets[0].id
                if target in _LANE_NAMES:
                    continue
                if isinstance(stmt.value, ast.Name) and stmt.value.id in self.lane_aliases:
                    self.lane_aliases.add(target)
            kept.append(self.visit(stmt))
        allowed = {id(n) for pointer in self.stored_lanes for n in ast.walk(pointer)}
        for stmt in kept:
            for node in ast.walk(stmt):
                if id(node) in allowed:
                    continue
                if isinstance(node, ast.Name) and (node.id in _GRID_NAMES or node.id == self.output):
                    raise Unsupported(f"the body uses {node.id} beyond one element per lane")
                if isinstance(node, ast.Attribute) and ast.unparse(node) in (
                    "tl.program_id",
                    "tl.num_programs",
                ):
                    raise Unsupported("the body reads its program id")
        if not self.writes and not any(
            isinstance(n, ast.Call) and ast.unparse(n.func) == "tl.store" for s in kept for n in ast.walk(s)
        ):
            raise Unsupported("the body stores nothing")
        return [ast.fix_missing_locations(s) for s in kept]

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = ast.unparse(node.func)
        if func not in ("tl.load", "tl.store") or not node.args:
            return node
        mask_position = 1 if func == "tl.load" else 2
        if self._is_output_lane(node.args[0]):
            # only a lane's unconditional read is its accumulator, and only an unconditional write
            # replaces the GEMM's own store of every element
            mask = [
                *node.args[mask_position : mask_position + 1],
                *(k.value for k in node.keywords if k.arg == "mask"),
            ]
            if any(not (_is_none(m) or ast.unparse(m) == "xmask") for m in mask):
                raise Unsupported(f"the output is accessed under the mask {ast.unparse(mask[0])}")
            if func == "tl.load":
                return ast.copy_location(ast.Name("value", ast.Load()), node)
            self.writes = True
            self.stored_lanes.append(node.args[0])
        # Inductor drops xmask where XBLOCK divides xnumel (leaving no mask, or only a data mask); a tile's
        # lanes past the output's edges must not touch memory, so every access is masked by xmask too
        masks = [k for k in node.keywords if k.arg == "mask"]
        if len(node.args) > mask_position:
            node.args[mask_position] = _with_lane_mask(node.args[mask_position])
        elif masks:
            masks[0].value = _with_lane_mask(masks[0].value)
        elif func == "tl.load" or len(node.args) == mask_position:
            node.keywords.append(ast.keyword("mask", ast.Name("xmask", ast.Load())))
        return node

    def _is_output_lane(self, pointer: ast.expr) -> bool:
        """`output + xindex` (or an alias of xindex); another use of the output is caught afterwards."""
        if not (isinstance(pointer, ast.BinOp) and isinstance(pointer.op, ast.Add)):
            return False
        sides = [pointer.left, pointer.right]
        names = [s.id for s in sides if isinstance(s, ast.Name)]
        return (
            len(names) == 2
            and self.output in names
            and any(n in self.lane_aliases for n in names if n != self.output)
        )


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _with_lane_mask(mask: ast.expr) -> ast.expr:
    """`mask` restricted to the tile's lanes inside the output: xmask itself for none, else `(mask) & xmask`
    unless it already involves xmask."""
    if _is_none(mask):
        return ast.Name("xmask", ast.Load())
    if any(isinstance(n, ast.Name) and n.id == "xmask" for n in ast.walk(mask)):
        return mask
    return ast.BinOp(mask, ast.BitAnd(), ast.Name("xmask", ast.Load()))


def _kernel_copy(source: str, original: str, name: str, placeholder: str, epilogue: str) -> str:
    """`original` (a kernel of `source`) renamed `name`, calling `epilogue` where it calls `placeholder`."""
    tree = ast.parse(source)
    kernel = next(f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == original)
    kernel.name = name
    for node in ast.walk(kernel):
        if isinstance(node, ast.Name) and node.id == placeholder:
            node.id = epilogue
    return ast.unparse(kernel)


def fuse_epilogues(
    steps: list[ast.stmt], pointwise: dict[str, tuple[Kernel, str]]
) -> tuple[list[ast.stmt], list[FusedEpilogue]]:
    """Host steps with each `_matmul(..., out=B)` or `B = _conv(...)` that is followed by a fusable
    pointwise launch on B (after only aliases of B, `del`s and buffer allocations, which move ahead of
    the call) given that launch as its `epilogue`; `pointwise` maps launcher names to (kernel, name it is
    launched under)."""
    result = list(steps)
    fused: dict[str, FusedEpilogue] = {}
    index = 0
    while index < len(result):
        launch_at = _fusable_launch(result, index, pointwise)
        if launch_at is not None:
            launch_index, keywords, epilogue, allocations = launch_at
            result[index].value.keywords += keywords  # type: ignore[attr-defined]
            moved = [result[i] for i in allocations]
            result = [s for i, s in enumerate(result) if i != launch_index and i not in allocations]
            result[index:index] = moved  # the epilogue's own output buffers exist before the call
            index += len(moved)
            fused.setdefault(epilogue.host_kernels[0], epilogue)
        index += 1
    return [ast.fix_missing_locations(s) for s in result], list(fused.values())


def _fusable_launch(
    steps: list[ast.stmt], index: int, pointwise: dict[str, tuple[Kernel, str]]
) -> tuple[int, list[ast.keyword], FusedEpilogue, list[int]] | None:
    host = _host_call(steps[index])
    if host is None:
        return None
    call, output = host
    aliases = {output.id}
    allocations: list[int] = []
    after = index + 1
    while after < len(steps):
        stmt = steps[after]
        named = _named_assign(stmt)
        if isinstance(stmt, ast.Delete):
            pass
        elif named is not None and isinstance(named[1], ast.Name) and named[1].id in aliases:
            aliases.add(named[0])
        elif named is not None and _is_allocation(named[1]):
            allocations.append(after)
        else:
            break
        after += 1
    launch = steps[after] if after < len(steps) else None
    if not (
        isinstance(launch, ast.Expr)
        and isinstance(launch.value, ast.Call)
        and isinstance(launch.value.func, ast.Name)
        and launch.value.func.id in pointwise
        and not launch.value.keywords
    ):
        return None
    kernel, name = pointwise[launch.value.func.id]
    args = launch.value.args
    on_output = [i for i, a in enumerate(args) if isinstance(a, ast.Name) and a.id in aliases]
    if len(args) != len(kernel.params) or len(on_output) != 1:
        return None
    other_names = {n.id for a in args for n in ast.walk(a) if isinstance(n, ast.Name)} - aliases
    between = [s for s in steps[index + 1 : after] if isinstance(s, ast.Delete)]
    if other_names & {t.id for s in between for t in ast.walk(s) if isinstance(t, ast.Name)}:
        return None  # deleted between the host call and the launch
    try:
        epilogue = fused_epilogue(kernel, name, kernel.params[on_output[0]], ast.unparse(call.func))
    except Unsupported:
        return None
    # `_matmul` writes into its `out`, which exists before the call; `_conv` makes its output, so the
    # arguments name it None and `_conv` puts its output there
    made = epilogue.host == "_conv"
    output_arg = ast.Constant(None) if made else ast.Name(output.id, ast.Load())
    launch_args = [output_arg if i in on_output else a for i, a in enumerate(args)]
    epilogue_args = [a for a, p in zip(launch_args, kernel.params, strict=True) if p != "xnumel"]
    value = ast.Tuple(
        [
            *(ast.Name(k, ast.Load()) for k in epilogue.host_kernels),
            ast.Name(launch.value.func.id, ast.Load()),
            ast.Tuple(launch_args, ast.Load()),
            ast.Tuple(epilogue_args, ast.Load()),
            ast.Constant(epilogue.writes_output),
        ],
        ast.Load(),
    )
    numel = launch_args[kernel.params.index("xnumel")]
    keywords = [ast.keyword("epilogue", value), ast.keyword("epilogue_numel", numel)]
    return after, keywords, epilogue, allocations


def _named_assign(stmt: ast.stmt) -> tuple[str, ast.expr] | None:
    """(name, value) of `name = value`, else None."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id, stmt.value
    return None


def _is_allocation(value: ast.expr) -> bool:
    """`_empty(...)`: a fresh buffer (render's helper for Inductor's empty_strided)."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "_empty"


def _host_call(stmt: ast.stmt) -> tuple[ast.Call, ast.Name] | None:
    """(the call, the name of its output) of `_matmul(..., out=B)` or `B = _conv(...)`, else None."""
    call = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        return None
    if isinstance(stmt, ast.Expr) and call.func.id == "_matmul":
        output = next((k.value for k in call.keywords if k.arg == "out"), None)
    elif isinstance(stmt, ast.Assign) and call.func.id == "_conv" and len(stmt.targets) == 1:
        output = stmt.targets[0]
    else:
        return None
    return (call, output) if isinstance(output, ast.Name) else None
