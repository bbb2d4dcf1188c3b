"""Row reductions: the tensor viewed as (outer, R, inner), one program per outer index.

With inner axes (a reduction over a middle dimension) a program also owns BLOCK_I contiguous inner
columns, so loads stay coalesced; tiles are then (BLOCK_R, BLOCK_I) and reduced values (1, BLOCK_I).

Strategies:
- ``looped``: one loop over R per reduction level, then one more to write a full-size output.
- ``online``: as looped, but a sum of ``exp(a - max(a))`` (softmax, log-softmax, logsumexp) is
  accumulated with the max in one pass, rescaling the running sum when the max grows.
- ``persistent``: the whole row in registers (BLOCK_R = next_power_of_2(R)) when it fits ROW_MAX;
  the looped kernel is kept as the fallback for longer rows.
"""

from __future__ import annotations

from kernelevolve.variation.codegen.ir import FusedProgram, Op
from kernelevolve.variation.codegen.kernel_builder import (
    KernelBuilder,
    Memory,
    Segment,
    Values,
    offset,
    size_expr,
)
from kernelevolve.variation.codegen.kernels import (
    COMBINE,
    CONSTEXPR_LOOP,
    FINAL,
    IDENTITY,
    Plan,
    Tunable,
    memories,
    store_value,
    warps,
)

OnlinePairs = dict[str, tuple[str, str]]  # sum op -> (max op, the value both reduce)


def online_pairs(program: FusedProgram) -> OnlinePairs:
    """Level-2 sums of exp(a - max(a)) that can share the max's pass; {} unless all level-2 ones do."""
    if program.levels != 2:
        return {}
    ops = {op.name: op for op in program.ops}
    pairs: OnlinePairs = {}
    for op in program.ops:
        if op.kind != "reduce" or op.level != 2:
            continue
        exp = ops.get(str(op.args[0]))
        diff = ops.get(str(exp.args[0])) if exp is not None and exp.fn == "exp" else None
        top = ops.get(str(diff.args[1])) if diff is not None and diff.fn == "sub" else None
        if op.fn != "sum" or diff is None or top is None or top.kind != "reduce" or top.fn != "max":
            return {}
        if top.args[0] != diff.args[0]:
            return {}
        pairs[op.name] = (top.name, str(diff.args[0]))
    return pairs


def row_reduction(program: FusedProgram, strategy: str) -> Plan:
    mems, out = memories(program)
    outer, red, inner = program.outer_axes(), program.reduce_axes, program.inner_axes()
    two_d = bool(inner)
    online = online_pairs(program) if strategy == "online" else {}
    looped = _row_kernel(program, mems, out, looped=True, online=online)
    persistent = _row_kernel(program, mems, out, looped=False) if strategy == "persistent" else None
    plan = Plan()
    if two_d:
        plan.tunables += [
            Tunable("BLOCK_R", 32, (8, 16, 32, 64, 128)),
            Tunable("BLOCK_I", 64, (16, 32, 64, 128, 256)),
        ]
    else:
        plan.tunables.append(Tunable("BLOCK_R", 1024, (256, 512, 1024, 2048, 4096)))
    plan.tunables.append(warps(4))
    if persistent is not None:
        plan.tunables.append(Tunable("ROW_MAX", 8192, (1024, 2048, 4096, 8192, 16384)))
    plan.forward += [f"_O = {size_expr(outer)}", f"_R = {size_expr(red)}", f"_I = {size_expr(inner)}"]
    grid = "(_O, triton.cdiv(_I, BLOCK_I))" if two_d else "(_O,)"
    plan.kernels = [kb.source() for kb in (looped, persistent) if kb is not None]
    plan.forward.append("if _O * _I > 0:")
    if persistent is not None:
        tile = "triton.next_power_of_2(_R)" + (" * BLOCK_I" if two_d else "")
        plan.forward.append(f"    if {tile} <= ROW_MAX:")
        plan.forward.extend("        " + line for line in persistent.launch(grid))
        plan.forward.append("    else:")
        plan.forward.extend("        " + line for line in looped.launch(grid))
    else:
        plan.forward.extend("    " + line for line in looped.launch(grid))
    return plan


def _row_kernel(
    program: FusedProgram,
    mems: dict[str, Memory],
    out: Memory,
    looped: bool,
    online: OnlinePairs | None = None,
) -> KernelBuilder:
    online = online or {}
    outer, red, inner = program.outer_axes(), program.reduce_axes, program.inner_axes()
    two_d = bool(inner)
    kb = KernelBuilder("_fused_row_looped" if looped else "_fused_row_persistent")
    all_mems = [*mems.values(), out]
    seg_o = Segment("o", "row", outer, all_mems, kb)
    seg_r = Segment("r", "r", red, all_mems, kb)
    seg_i = Segment("i", "i", inner, all_mems, kb)
    values = Values(program, kb)
    red_set = set(red)

    def full(op: Op) -> bool:
        return bool(op.axes & red_set)

    r_size = kb.param("R", "_R")
    kb.const("BLOCK_R", "BLOCK_R" if looped else "triton.next_power_of_2(_R)")
    kb.line("row = tl.program_id(0).to(tl.int64)")
    if two_d:
        i_size = kb.param("I", "_I")
        kb.const("BLOCK_I", "BLOCK_I")
        kb.line("i = tl.program_id(1) * BLOCK_I + tl.arange(0, BLOCK_I)[None, :]")
        kb.line(f"imask = i < {i_size}")
    bases: dict[str, str | None] = {}
    for mem in all_mems:
        term = seg_o.term(mem)
        bases[mem.name] = f"{mem.name}_base" if term else None
        if term:
            kb.line(f"{mem.name}_base = {term}")

    def load(arg: str) -> tuple[str, str | None]:
        mem = mems[arg]
        rt, it = seg_r.term(mem), seg_i.term(mem)
        mask = "mask" if rt and it else "rmask" if rt else "imask" if it else None
        return offset(bases[arg], rt, it), mask

    def open_tile(depth: int, start: str) -> None:
        rng = f"{start} + tl.arange(0, BLOCK_R)"
        kb.line(f"r = ({rng})[:, None]" if two_d else f"r = {rng}", depth)
        kb.line(f"rmask = r < {r_size}", depth)
        kb.line("mask = rmask & imask" if two_d else "mask = rmask", depth)

    def emit_row(level: int) -> None:
        for op in program.ops:
            if not full(op) and op.kind != "reduce" and op.level == level:
                values.emit(op, op.name, load, 1)

    def masked(op: Op) -> str:
        x = values.ref(str(op.args[0]))
        if values.is_bool(op.args[0]):
            x = f"{x}.to(tl.float32)"
        return f"tl.where(mask, {x}, {IDENTITY[op.fn]})"

    keep = ", keep_dims=True" if two_d else ""
    tile_shape = "[BLOCK_R, BLOCK_I]" if two_d else "[BLOCK_R]"
    out_full = full(values.ops[program.output])
    emit_row(0)
    if not looped:
        open_tile(1, "0")
        for op in program.ops:
            if op.kind == "reduce":
                kb.line(f"{op.name} = {FINAL[op.fn]}({masked(op)}, axis=0{keep})")
                values.names[op.name] = op.name
            elif full(op) or op.level > 0:
                values.emit(op, op.name, load, 1)
    else:
        kb.const("R_ITERS", "triton.cdiv(_R, BLOCK_R)")
        kb.line(CONSTEXPR_LOOP)
        reds = [op for op in program.ops if op.kind == "reduce"]
        if online:  # one pass: level-1 reductions with the level-2 sums folded into their max
            groups = [([op for op in reds if op.level == 1 or op.name in online], [1, 2])]
        else:
            groups = [([op for op in reds if op.level == lv], [lv]) for lv in range(1, program.levels + 1)]
        for g, (group, row_levels) in enumerate(groups, 1):
            plain = [op for op in group if op.name not in online]
            for op in group:
                kb.line(f"acc_{op.name} = tl.full({tile_shape}, {IDENTITY[op.fn]}, tl.float32)")
            kb.line("for k in range(R_ITERS):")
            open_tile(2, "k * BLOCK_R")
            for op in values.closure([str(op.args[0]) for op in plain], full):
                values.emit(op, f"{op.name}_p{g}", load, 2)
            for op in plain:
                folded = [s for s, (m, _) in online.items() if m == op.name]
                if not folded:
                    kb.line(f"acc_{op.name} = {COMBINE[op.fn].format(acc=f'acc_{op.name}', x=masked(op))}", 2)
                    continue
                kb.line(f"m_new = {COMBINE['max'].format(acc=f'acc_{op.name}', x=masked(op))}", 2)
                for s in folded:
                    a = values.ref(online[s][1])
                    grown = (
                        f"acc_{s} * tl.exp(acc_{op.name} - m_new) + tl.where(mask, tl.exp({a} - m_new), 0.0)"
                    )
                    kb.line(f"acc_{s} = tl.where(m_new == float('-inf'), 0.0, {grown})", 2)
                kb.line(f"acc_{op.name} = m_new", 2)
            for op in plain:
                kb.line(f"{op.name} = {FINAL[op.fn]}(acc_{op.name}, axis=0{keep})")
                values.names[op.name] = op.name
            for s, (m, _) in online.items():
                rescaled = f"tl.where(acc_{m} == float('-inf'), 0.0, acc_{s} * tl.exp(acc_{m} - {m}))"
                kb.line(f"{s} = tl.sum({rescaled}, axis=0{keep})")
                values.names[s] = s
            for level in row_levels:
                emit_row(level)
        if out_full:
            kb.line("for k in range(R_ITERS):")
            open_tile(2, "k * BLOCK_R")
            for op in values.closure([program.output], full):
                values.emit(op, f"{op.name}_p{len(groups) + 1}", load, 2)
    depth = 2 if looped and out_full else 1
    store_mask = "mask" if out_full else ("imask" if two_d else None)
    where = offset(bases["out"], seg_r.term(out) if out_full else None, seg_i.term(out))
    mask_kw = f", mask={store_mask}" if store_mask else ""
    kb.line(
        f"tl.store({kb.param('out_ptr', '_out')} + {where}, {store_value(values, program)}{mask_kw})", depth
    )
    return kb
