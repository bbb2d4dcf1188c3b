"""Kernel bodies and launches for pointwise and split (every axis reduced) programs, plus the shared
pieces of all patterns (row reductions live in row_kernels.py).

Each pattern function returns a `Plan`: Triton kernel sources, the forward lines that launch them,
and the module-level tunables they read. Names of kernel-side variables: ``offs``/``row``/``r``/``i`` are
indices, ``mask``/``rmask``/``imask`` their bounds, ``v<n>`` IR values (``v<n>_p<k>`` when pass k
of a looped reduction recomputes them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelevolve.variation.codegen.ir import FusedProgram, Op
from kernelevolve.variation.codegen.kernel_builder import (
    KernelBuilder,
    Memory,
    Segment,
    Values,
    arg_memory,
    offset,
    output_memory,
    size_expr,
)

IDENTITY = {"sum": "0.0", "max": "float('-inf')", "min": "float('inf')"}
COMBINE = {
    "sum": "{acc} + {x}",
    "max": "tl.maximum({acc}, {x}, propagate_nan=tl.PropagateNan.ALL)",
    "min": "tl.minimum({acc}, {x}, propagate_nan=tl.PropagateNan.ALL)",
}
FINAL = {"sum": "tl.sum", "max": "tl.max", "min": "tl.min"}
CONSTEXPR_LOOP = (
    "# constexpr trip count: the Triton 3.6 interpreter cannot loop to a runtime bound (NumPy 2.4)"
)


@dataclass(frozen=True)
class Tunable:
    name: str
    default: int
    choices: tuple[int, ...]

    def line(self) -> str:
        return f"{self.name} = {self.default}  # tune: {', '.join(str(c) for c in self.choices)}"


@dataclass
class Plan:
    kernels: list[str] = field(default_factory=list)
    forward: list[str] = field(default_factory=list)
    tunables: list[Tunable] = field(default_factory=list)


def memories(program: FusedProgram) -> tuple[dict[str, Memory], Memory]:
    used = {str(op.args[0]) for op in program.ops if op.kind == "load"}
    mems = {a.name: arg_memory(a.name, a.axes) for a in program.args if a.name in used}
    return mems, output_memory("_out", program.output_dims)


def store_value(values: Values, program: FusedProgram) -> str:
    return f"{values.ref(program.output)}.to(out_ptr.dtype.element_ty)"


# ---------------------------------------------------------------------------------------------
def pointwise(program: FusedProgram, grid_stride: bool) -> Plan:
    mems, out = memories(program)
    kb = KernelBuilder("_fused_pointwise")
    seg = Segment("n", "offs", program.order, [*mems.values(), out], kb)
    values = Values(program, kb)
    n = kb.param("N", "_N")
    kb.const("BLOCK_SIZE", "BLOCK_SIZE")
    depth = 1
    kb.line("pid = tl.program_id(0)")
    if grid_stride:
        nprog = kb.param("num_progs", "_G")
        kb.const("ITERS", "triton.cdiv(triton.cdiv(_N, BLOCK_SIZE), _G)")
        kb.line(CONSTEXPR_LOOP)
        kb.line("for k in range(ITERS):")
        depth = 2
        kb.line(f"offs = (pid + k * {nprog}).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)", depth)
    else:
        kb.line("offs = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)")
    kb.line(f"mask = offs < {n}", depth)

    def load(arg: str) -> tuple[str, str | None]:
        term = seg.term(mems[arg])
        return offset(term), ("mask" if term else None)

    for op in program.ops:
        values.emit(op, op.name, load, depth)
    out_ptr = kb.param("out_ptr", "_out")
    kb.line(
        f"tl.store({out_ptr} + {offset(seg.term(out))}, {store_value(values, program)}, mask=mask)", depth
    )

    plan = Plan(tunables=[Tunable("BLOCK_SIZE", 1024, (256, 512, 1024, 2048, 4096)), warps(4)])
    plan.kernels.append(kb.source())
    plan.forward.append(f"_N = {size_expr(program.order)}")
    if grid_stride:
        plan.tunables.append(Tunable("MAX_PROGRAMS", 1024, (132, 264, 528, 1024, 2048, 4096)))
        plan.forward.append("_G = max(1, min(triton.cdiv(_N, BLOCK_SIZE), MAX_PROGRAMS))")
        grid = "(_G,)"
    else:
        grid = "(triton.cdiv(_N, BLOCK_SIZE),)"
    plan.forward.append("if _N > 0:")
    plan.forward.extend("    " + line for line in kb.launch(grid))
    return plan


def warps(default: int) -> Tunable:
    return Tunable("NUM_WARPS", default, (1, 2, 4, 8, 16))


# ---------------------------------------------------------------------------------------------
def split_reduction(program: FusedProgram) -> Plan:
    """Every axis reduced: stage kernels write per-program partials, a finish kernel combines them."""
    mems, out = memories(program)
    reds = [op for op in program.ops if op.kind == "reduce"]
    slot = {op.name: j for j, op in enumerate(reds)}
    out_full = bool(program.op(program.output).axes)
    plan = Plan(
        tunables=[
            Tunable("BLOCK_SIZE", 1024, (256, 512, 1024, 2048, 4096)),
            warps(4),
            Tunable("MAX_PARTIALS", 512, (64, 128, 256, 512, 1024, 2048)),
        ]
    )
    plan.forward += [
        f"_N = {size_expr(program.order)}",
        "_P = max(1, min(triton.cdiv(_N, BLOCK_SIZE), MAX_PARTIALS))",
        f"_part = torch.empty(({len(reds)}, _P), device=_out.device, dtype=torch.float32)",
    ]
    for level in range(1, program.levels + 2):
        final = level == program.levels + 1
        kb = KernelBuilder("_fused_finish" if final else f"_fused_stage{level}")
        values = Values(program, kb)
        seg = Segment("n", "offs", program.order, [*mems.values(), out], kb)
        n = kb.param("N", "_N")
        part = kb.param("part_ptr", "_part")
        p_count = kb.param("P", "_P")
        kb.const("BLOCK_SIZE", "BLOCK_SIZE")
        kb.const("BLOCK_P", "triton.next_power_of_2(_P)")

        def load(arg: str, seg: Segment = seg) -> tuple[str, str | None]:
            term = seg.term(mems[arg])
            return offset(term), ("mask" if term else None)

        def vector(op: Op) -> bool:
            return bool(op.axes)

        targets = [program.output] if final else [str(op.args[0]) for op in reds if op.level == level]
        needed = values.closure(targets, lambda op: True)
        scalars = [op for op in needed if not vector(op)]
        vectors = [op for op in needed if vector(op)]
        kb.line("pid = tl.program_id(0)")
        if any(op.kind == "reduce" for op in scalars):
            kb.line("p = tl.arange(0, BLOCK_P)")
            kb.line(f"pmask = p < {p_count}")
        for op in scalars:
            if op.kind == "reduce":
                j = slot[op.name]
                src = f"tl.load({part} + {j} * {p_count} + p, mask=pmask, other={IDENTITY[op.fn]})"
                kb.line(f"{op.name} = {FINAL[op.fn]}({src}, axis=0)")
                values.names[op.name] = op.name
            else:
                values.emit(op, op.name, load, 1)
        if final:
            if out_full:
                kb.line("offs = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)")
                kb.line(f"mask = offs < {n}")
                for op in vectors:
                    values.emit(op, op.name, load, 1)
                where = offset(seg.term(out))
                kb.line(
                    f"tl.store({kb.param('out_ptr', '_out')} + {where}, {store_value(values, program)}, mask=mask)"
                )
            else:
                kb.line(f"tl.store({kb.param('out_ptr', '_out')}, {store_value(values, program)})")
            grid = "(triton.cdiv(_N, BLOCK_SIZE),)" if out_full else "(1,)"
        else:
            level_reds = [op for op in reds if op.level == level]
            for op in level_reds:
                kb.line(f"acc_{op.name} = tl.full([BLOCK_SIZE], {IDENTITY[op.fn]}, tl.float32)")
            kb.const("ITERS", "triton.cdiv(triton.cdiv(_N, BLOCK_SIZE), _P)")
            kb.line(CONSTEXPR_LOOP)
            kb.line("for k in range(ITERS):")
            kb.line(f"offs = (pid + k * {p_count}).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)", 2)
            kb.line(f"mask = offs < {n}", 2)
            for op in vectors:
                values.emit(op, f"{op.name}_p{level}", load, 2)
            for op in level_reds:
                x = values.ref(str(op.args[0]))
                if values.is_bool(op.args[0]):
                    x = f"{x}.to(tl.float32)"
                combine = COMBINE[op.fn].format(
                    acc=f"acc_{op.name}", x=f"tl.where(mask, {x}, {IDENTITY[op.fn]})"
                )
                kb.line(f"acc_{op.name} = {combine}", 2)
            for op in level_reds:
                kb.line(
                    f"tl.store({part} + {slot[op.name]} * {p_count} + pid, {FINAL[op.fn]}(acc_{op.name}, axis=0))"
                )
            grid = "(_P,)"
        plan.kernels.append(kb.source())
        plan.forward.extend(kb.launch(grid))
    return plan
