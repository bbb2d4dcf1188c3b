"""Write a standalone candidate from Inductor programs, one per benchmark shape.

ModelNew's `__init__` (with the methods it calls) is the reference's, copied as the fusion seeds do,
so its parameters and buffers match the reference's; `forward` hands them, then the inputs, to the
program captured for the input shapes it is given, which passes on only those Inductor's code takes
(Dynamo drops unused ones, and bakes scalar inputs in: dispatch checks those equal the captured
values). Kernels and their block sizes are per shape: Inductor specialises its code to the sizes, and
so do we. Every block size and warp count is a module-level tunable with the values that keep the
kernel valid (a dimension without a bounds mask only takes blocks dividing it).
"""

from __future__ import annotations

import ast
import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any

from kernelevolve.variation.codegen.emit import reference_parts
from kernelevolve.variation.codegen.kernels import Tunable
from kernelevolve.variation.compiler.gemm_epilogue import (
    CONV_EPILOGUE_TUNABLES,
    EPILOGUE_TUNABLES,
    FusedEpilogue,
    fuse_epilogues,
)
from kernelevolve.variation.compiler.library_conv import (
    LIBRARY_CONV_SOURCE,
    LIBRARY_CONV_TUNABLES,
    LibraryConv,
)
from kernelevolve.variation.compiler.library_gemm import (
    LIBRARY_GEMM_SOURCE,
    LIBRARY_GEMM_TUNABLES,
    LibraryGemm,
)
from kernelevolve.variation.compiler.own_attention import (
    ATTENTION_SOURCE,
    ATTENTION_TUNABLES,
    FUSED_OPS,
    OwnAttention,
)
from kernelevolve.variation.compiler.own_conv import CONV_SOURCE, CONV_TUNABLES, CONVOLUTION, OwnConv
from kernelevolve.variation.compiler.own_encoder import ENCODER_OPS, ENCODER_SOURCE
from kernelevolve.variation.compiler.own_gemm import GEMM_SOURCE, GEMM_TUNABLES, SUBSTITUTED, OwnGemm
from kernelevolve.variation.compiler.program import Axis, Kernel, Program
from kernelevolve.variation.compiler.tf32_split import TF32_SPLIT_KERNEL_SOURCE, TF32_SPLIT_SOURCE
from kernelevolve.variation.kernels import kernel_source

MAX_GRID_AXIS = 65535
_HELPERS = '''

def _empty(device, size, stride, dtype):
    return torch.empty_strided(size, stride, dtype=dtype, device=device)


def _view(tensor, size, stride, offset):
    return tensor.as_strided(size, stride, tensor.storage_offset() + offset)


def _grid_axis(blocks):
    """(blocks on this axis, blocks on its overflow axis): CUDA grids stop at 65535 on y and z."""
    if blocks <= 65535:
        return blocks, 1
    return 65535, triton.cdiv(blocks, 65535)
'''


@dataclass(frozen=True)
class ShapeProgram:
    shape: str
    input_shapes: tuple[tuple[int, ...], ...]
    state_names: tuple[str, ...]
    program: Program
    graph_inputs: tuple[int, ...] | None = None  # positions in [*state, *inputs] the call takes; None: all
    constants: tuple[tuple[int, Any], ...] = ()  # (input position, value) baked into the program
    attention_head_dim: int = 0  # the largest head size of a fused attention op (0: none; capture.py)


# libdevice functions with a tl.math equivalent: Triton's CPU interpreter runs only the latter.
INTERPRETER_MATH = (
    "abs",
    "ceil",
    "cos",
    "erf",
    "exp",
    "exp2",
    "floor",
    "fma",
    "log",
    "log2",
    "rsqrt",
    "sin",
    "sqrt",
)
# libdevice functions without one, run by our own (kernels/interpreter_libdevice.py, pasted in where used)
INTERPRETER_LIBDEVICE = ("nearbyint", "signbit", "tanh")
INTERPRETER_LIBDEVICE_SOURCE = "\n\n" + kernel_source("interpreter_libdevice")
_LIBDEVICE_CALL = re.compile(r"\blibdevice\.(\w+)\(")
# Inductor's max2/min2 reduce with a Python combine function, which Triton's interpreter calls once per
# element (about 3 ms a call: 60 s of the CPU demo's 80 went to one softmax candidate). The interpreter
# gets the same NaN-propagating reductions from its builtin ones (kernels/interpreter_reductions.py).
_INTERPRETER_REDUCTIONS = {
    "triton_helpers.max2(": "_ke_interp_max2(",
    "triton_helpers.min2(": "_ke_interp_min2(",
}
INTERPRETER_REDUCTIONS_SOURCE = "\n\n" + kernel_source("interpreter_reductions")


class RenderError(Exception):
    """The programs cannot be written as a candidate for this platform."""


def for_interpreter(kernel_source: str) -> str:
    """libdevice calls as tl.math calls and Inductor's max2/min2 as builtin reductions (CPU platform);
    RenderError if a libdevice call has no equivalent."""
    known = (*INTERPRETER_MATH, *INTERPRETER_LIBDEVICE)
    missing = sorted({f for f in _LIBDEVICE_CALL.findall(kernel_source) if f not in known})
    if missing:
        raise RenderError(f"libdevice {', '.join(missing)} cannot run in Triton's interpreter")
    kernel_source = _LIBDEVICE_CALL.sub(
        lambda m: (
            f"_ke_interp_{m.group(1)}(" if m.group(1) in INTERPRETER_LIBDEVICE else f"tl.math.{m.group(1)}("
        ),
        kernel_source,
    )
    for inductor, builtin in _INTERPRETER_REDUCTIONS.items():
        kernel_source = kernel_source.replace(inductor, builtin)
    return kernel_source


def _uses_own_libdevice(block: str) -> bool:
    return any(f"_ke_interp_{name}(" in block for name in INTERPRETER_LIBDEVICE)


def render(
    reference_source: str,
    programs: list[ShapeProgram],
    title: str,
    interpreter: bool = False,
    own_kernels: bool = False,
) -> tuple[str, dict[str, int]]:
    """(candidate source, tunables and their defaults); `interpreter` for the CPU platform;
    `own_kernels` puts our Triton GEMM, convolution and attention in place of the library calls
    (`own_gemm.substitutable`)."""
    prelude, bases, class_body, forward_sig = reference_parts(reference_source)
    blocks = ProgramBlocks(interpreter, own_kernels)
    for index, shaped in enumerate(programs):
        blocks.add(shaped, f"_s{index}", f"S{index}", f"_call_s{index}")
    lines = blocks.module_lines(
        f'"""Inductor\'s Triton kernels for {title}, launched by ModelNew itself (compiler_seed)."""', prelude
    )
    lines += ["", f"class ModelNew({bases}):"]
    lines += ["    " + line if line else "" for line in class_body.splitlines()]
    lines += ["", f"    def forward({forward_sig}):", *_forward_body(forward_sig, programs)]
    source = "\n".join(lines) + "\n"
    ast.parse(source)  # a rendering bug must surface here, not as a candidate's compile error
    return source, blocks.defaults()


class ProgramBlocks:
    """The kernels, launchers and call functions of Inductor programs (`add`, one per program), and the
    module they make with the library sources their calls need (`module_lines`)."""

    def __init__(self, interpreter: bool, own_kernels: bool) -> None:
        self.interpreter, self.own_kernels = interpreter, own_kernels
        self.tunables: list[Tunable] = []
        self.kernel_blocks: list[str] = []
        self.call_blocks: list[str] = []
        self.epilogues: list[FusedEpilogue] = []
        self.calls: set[str] = set()

    def add(self, shaped: ShapeProgram, suffix: str, prefix: str, call_name: str) -> None:
        """The program's kernels (renamed with `suffix`, tunables prefixed `prefix`_K<n>) and its call
        function `call_name(args, device)`."""
        renames = {k.name: k.name + suffix for k in shaped.program.kernels}
        pointwise: dict[str, tuple[Kernel, str]] = {}
        for number, kernel in enumerate(shaped.program.kernels):
            own = _tunables(kernel, f"{prefix}_K{number}")
            self.tunables += own
            kernel_source = for_interpreter(kernel.source) if self.interpreter else kernel.source
            self.kernel_blocks.append(_renamed(kernel_source, renames))
            self.kernel_blocks.append(
                _launcher(kernel, renames[kernel.name], f"{prefix}_K{number}", {t.name for t in own})
            )
            if kernel.kind == "pointwise":
                renamed = renames[kernel.name]
                pointwise[f"_launch_{renamed}"] = (dataclasses.replace(kernel, source=kernel_source), renamed)
        call_block, fused = _call_function(
            shaped, call_name, renames, self.own_kernels, pointwise, not self.interpreter
        )
        self.call_blocks.append(call_block)
        self.epilogues += fused
        self.calls |= set(shaped.program.library_calls)

    def defaults(self) -> dict[str, int]:
        return {t.name: t.default for t in self.tunables}

    def module_lines(self, docstring: str, prelude: list[str]) -> list[str]:
        """The module up to ModelNew: imports, tunables, library sources, helpers, kernels, calls."""
        own_kernels, interpreter, calls = self.own_kernels, self.interpreter, self.calls
        kernel_blocks = self.kernel_blocks + [e.source for e in self.epilogues]
        replaced = set(FUSED_OPS) if own_kernels else set()
        uses_aten = any(c.startswith("torch.ops.aten") for c in calls - replaced)
        hosts = {e.host for e in self.epilogues}
        gemm_tunables = [*GEMM_TUNABLES, *(EPILOGUE_TUNABLES if "_matmul" in hosts else ())]
        # the encoder layer's helper runs our GEMM and attention too
        gemm = [*gemm_tunables, GEMM_SOURCE] if own_kernels and calls & {*SUBSTITUTED, *ENCODER_OPS} else []
        if own_kernels and calls & set(FUSED_OPS):
            gemm += [*ATTENTION_TUNABLES, ATTENTION_SOURCE]
        if own_kernels and calls & set(ENCODER_OPS):
            gemm.append(ENCODER_SOURCE)
        if own_kernels and CONVOLUTION in calls:
            gemm += [*CONV_TUNABLES, *(CONV_EPILOGUE_TUNABLES if "_conv" in hosts else ()), CONV_SOURCE]
        library = not own_kernels and not interpreter  # on a GPU: cuDNN/cuBLAS through our wrappers
        if library and CONVOLUTION in calls:
            gemm += [*LIBRARY_CONV_TUNABLES, LIBRARY_CONV_SOURCE]
        if library and calls & set(SUBSTITUTED):
            gemm += [*LIBRARY_GEMM_TUNABLES, LIBRARY_GEMM_SOURCE]
        if library and calls & {CONVOLUTION, *SUBSTITUTED}:
            gemm += [TF32_SPLIT_SOURCE, TF32_SPLIT_KERNEL_SOURCE]
        if interpreter:  # Triton's interpreter takes no bf16x3 dot (it computes every fp32 dot in fp32)
            gemm = [line.replace(', "bf16x3"', "") for line in gemm]
        lines = [
            docstring,
            "",
            *prelude,
            "from torch._inductor.runtime import triton_helpers",
            "from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math",
            "",
            *(["aten = torch.ops.aten", ""] if uses_aten else []),
            *[t.line() for t in self.tunables],
            *gemm,
            _HELPERS,
            *([INTERPRETER_REDUCTIONS_SOURCE] if interpreter else []),
            *([INTERPRETER_LIBDEVICE_SOURCE] if any(_uses_own_libdevice(b) for b in kernel_blocks) else []),
        ]
        for block in kernel_blocks + self.call_blocks:
            lines += ["", "", block.rstrip("\n")]
        return lines


def _forward_body(forward_sig: str, dispatch: list[ShapeProgram]) -> list[str]:
    """Direct calls per input shapes (not a table), so the static checks can follow the launches."""
    params = [a for a in ast.parse(f"def f({forward_sig}): pass").body[0].args.args[1:]]  # type: ignore[attr-defined]
    names = ", ".join(a.arg for a in params)
    lines = [
        f"        inputs = [{names}]",
        "        key = tuple(tuple(t.shape) for t in inputs if isinstance(t, torch.Tensor))",
        "        args = [*[t for _, t in self.named_parameters()], *[t for _, t in self.named_buffers()], *inputs]",
        "        device = next(t.device for t in inputs if isinstance(t, torch.Tensor))",
    ]
    for index, shaped in enumerate(dispatch):
        keyword = "if" if index == 0 else "elif"
        lines += [
            f"        {keyword} {_dispatch_condition(shaped)}:",
            f"            outputs = _call_s{index}(args, device)",
        ]
    lines += [
        "        else:",
        "            raise NotImplementedError(f'no generated program for input shapes {key}')",
        "        return outputs[0] if len(outputs) == 1 else outputs",
    ]
    return lines


def _dispatch_condition(shaped: ShapeProgram) -> str:
    """The input shapes, and the scalars baked into the program: another value needs another program."""
    checks = [f"key == {shaped.input_shapes!r}"]
    # compared as text: the static checks cannot tell a scalar input from a tensor one
    checks += [f"repr(inputs[{index}]) == {repr(value)!r}" for index, value in shaped.constants]
    return " and ".join(checks)


def _call_function(
    shaped: ShapeProgram,
    name: str,
    renames: dict[str, str],
    own_kernels: bool,
    pointwise: dict[str, tuple[Kernel, str]],
    on_gpu: bool,
) -> tuple[str, list[FusedEpilogue]]:
    """The shape's call function, and the GEMM epilogues fused into it (own kernels only); on a GPU,
    library convolutions and matmuls go through `_library_convolution` and `_library_matmul` (their
    precisions tunables)."""
    program = shaped.program

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id.startswith("_launch_") and node.id[len("_launch_") :] in renames:
                return ast.copy_location(
                    ast.Name("_launch_" + renames[node.id[len("_launch_") :]], node.ctx), node
                )
            return node

    steps = [Rename().visit(ast.parse(ast.unparse(s))) for s in program.body]
    fused: list[FusedEpilogue] = []
    if own_kernels:
        steps = [
            ast.fix_missing_locations(
                OwnConv(program.layouts).visit(OwnGemm().visit(OwnAttention().visit(s)))
            )
            for s in steps
        ]
        statements = [
            stmt for step in steps for stmt in (step.body if isinstance(step, ast.Module) else [step])
        ]
        steps, fused = fuse_epilogues(statements, pointwise)
    elif on_gpu:
        steps = [ast.fix_missing_locations(LibraryGemm().visit(LibraryConv().visit(s))) for s in steps]
    body = [ast.unparse(s) for s in steps]
    names = ", ".join(program.arg_names)
    lines = [
        f"def {name}(args, device):",
        f'    """Shape {shaped.shape}: state {list(shaped.state_names)}, then the inputs."""',
        *_graph_inputs_selection(shaped),
        f"    {names}, = args",
    ]
    for statement in body:
        lines += ["    " + line for line in statement.splitlines()]
    return "\n".join(lines), fused


def _graph_inputs_selection(shaped: ShapeProgram) -> list[str]:
    """The line keeping only the arguments Inductor's call takes (Dynamo dropped the others)."""
    if shaped.graph_inputs is None:
        return []
    if len(shaped.graph_inputs) != len(shaped.program.arg_names):
        raise RenderError(
            f"shape {shaped.shape}: the generated call takes {len(shaped.program.arg_names)} arguments, "
            f"the captured graph {len(shaped.graph_inputs)}"
        )
    return [f"    args = [args[i] for i in {shaped.graph_inputs!r}]"]


def _renamed(source: str, renames: dict[str, str]) -> str:
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in renames:
            node.name = renames[node.name]
    return ast.unparse(tree)


def _launcher(kernel: Kernel, name: str, prefix: str, tunables: set[str]) -> str:
    grid = ["1", "1", "1"]
    lines = [f"def _launch_{name}({', '.join(kernel.params)}):"]
    for axis in kernel.axes:
        size = kernel.fixed_blocks.get(axis.block, f"{prefix}_{axis.block}")  # fixed in the body, or tuned
        blocks = f"triton.cdiv({axis.prefix}numel, {size})"
        if axis.overflow_axis is None:
            grid[axis.program_axis] = blocks
        else:
            lines.append(f"    {axis.prefix}_main, {axis.prefix}_over = _grid_axis({blocks})")
            grid[axis.program_axis] = f"{axis.prefix}_main"
            grid[axis.overflow_axis] = f"{axis.prefix}_over"
    blocks_kw = "".join(f"{b}={prefix}_{b}, " for b in kernel.blocks)
    warps = f"{prefix}_WARPS"
    lines.append(f"    {name}[({', '.join(grid)})]({', '.join(kernel.params)}, {blocks_kw}num_warps={warps})")
    assert all(f"{prefix}_{b}" in tunables for b in kernel.blocks)
    return "\n".join(lines)


def _pow2_upto(limit: int) -> list[int]:
    return [1 << i for i in range(max(limit, 1).bit_length()) if (1 << i) <= limit]


def _next_pow2(n: int) -> int:
    return 1 << max(0, (max(n, 1) - 1).bit_length())


def _choices(axis_prefix: str, kernel: Kernel, cap: int) -> list[int]:
    size = kernel.numels.get(axis_prefix, cap)
    values = _pow2_upto(min(cap, _next_pow2(size)))
    if axis_prefix in kernel.unmasked:
        values = [v for v in values if size % v == 0]
    return values or [1]


def _pick(values: list[int], want: int) -> int:
    fitting = [v for v in values if v <= want]
    return max(fitting) if fitting else min(values)


def _tunables(kernel: Kernel, prefix: str) -> list[Tunable]:
    """Block sizes Inductor's heuristics would start from, and the range tuning may move them in."""
    out: list[Tunable] = []
    fixed_r = kernel.fixed_blocks.get("R0_BLOCK", 1)
    for block in kernel.blocks:
        axis_prefix = "r0_" if block == "R0_BLOCK" else block[0].lower()
        if kernel.kind == "pointwise":
            cap = 4096 if len(kernel.blocks) == 1 else 128
            want = 1024 if len(kernel.blocks) == 1 else 32
        elif block == "R0_BLOCK":
            cap, want = 4096, 2048
        elif kernel.kind == "reduction":  # looped reduction: a few rows per program
            r_size = kernel.numels.get("r0_", 1)
            cap, want = 64, (1 if r_size >= 256 else max(1, 256 // _next_pow2(r_size)))
        else:  # persistent reduction: the whole row is in registers, R0_BLOCK is fixed
            cap, want = max(1, 16384 // fixed_r), max(1, min(64, 2048 // fixed_r))
        values = _choices(axis_prefix, kernel, cap)
        out.append(Tunable(f"{prefix}_{block}", _pick(values, want), tuple(values)))
    elements = math.prod(t.default for t in out) * fixed_r
    warps = 8 if elements >= 4096 else 4 if elements >= 512 else 2
    out.append(Tunable(f"{prefix}_WARPS", warps, (1, 2, 4, 8, 16)))
    return out


__all__ = ["Axis", "ShapeProgram", "Tunable", "render"]
