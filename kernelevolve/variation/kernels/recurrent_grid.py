"""Our LSTM and GRU layers' "grid" kernels (recurrent.py says when they run): programs split a layer's
hidden units, both directions in one launch, each reading only its slice of W_hh and keeping its units'
state in registers; a direction's programs meet at a grid barrier (an atomic counter) between steps.
`# fmt: off` keeps the layout candidates have.
"""
# fmt: off

import triton
import triton.language as tl

from kernelevolve.variation.kernels.tanh import _ke_tanh


@triton.jit
def _ke_grid_barrier(counter_ptr, target):
    # every program's writes so far visible to every program: all threads done (bar.sync), one release-add
    # a program, then acquire reads until all programs have counted this step (the counter only grows)
    tl.debug_barrier()
    tl.atomic_add(counter_ptr, 1, sem="release")
    seen = tl.atomic_add(counter_ptr, 0, sem="acquire")
    while seen < target:
        seen = tl.atomic_add(counter_ptr, 0, sem="acquire")
    tl.debug_barrier()


@triton.jit
def _ke_gate_dot(acc, h, w_ptr, units, umask, ks, kmask, H, USE_DOT: tl.constexpr):
    # acc (BLOCK_B, BLOCK_U) + h (BLOCK_B, BLOCK_K) @ W[units, ks]^T in fp32 (TF32 would miss fp32's
    # tolerance): tl.dot needs 16 units at least; a broadcast product summed over K takes any number
    w = tl.load(w_ptr + units[:, None] * H + ks[None, :], mask=umask[:, None] & kmask[None, :], other=0.0)
    if USE_DOT:
        return tl.dot(h, tl.trans(w), acc, input_precision="ieee")
    return acc + tl.sum(h[:, None, :] * w[None, :, :], axis=2)


@triton.jit
def _ke_grid_tile(ptr, rows, units, rmask, umask, row_stride):
    # a (BLOCK_B, BLOCK_U) tile of a row-major (B, row_stride) array; masked entries read as 0
    return tl.load(ptr + rows[:, None] * row_stride + units[None, :], mask=rmask[:, None] & umask[None, :], other=0.0)


@triton.jit
def _ke_grid_store(ptr, value, rows, units, rmask, umask, row_stride):
    tl.store(ptr + rows[:, None] * row_stride + units[None, :], value, mask=rmask[:, None] & umask[None, :])


@triton.jit
def _ke_gate_input(
    proj, b_hh_ptr, gate, rows, units, rmask, umask, H, GATES: tl.constexpr, HAS_B_HH: tl.constexpr
):
    # a gate's (BLOCK_B, BLOCK_U) tile of this step's input projection, plus its b_hh where there is one
    acc = _ke_grid_tile(proj + gate * H, rows, units, rmask, umask, GATES * H)
    if HAS_B_HH:
        acc += tl.load(b_hh_ptr + gate * H + units, mask=umask, other=0.0)[None, :]
    return acc


@triton.jit
def _ke_grid_step(step, T, B, H, d):
    # the time index a step of direction d (1: reversed) reads, and the offsets of the state slot it reads
    # (step % 2) and writes
    return step + d * (T - 1 - 2 * step), (step % 2) * B * H, ((step + 1) % 2) * B * H


@triton.jit
def _ke_grid_lanes(H, B, BLOCK_U: tl.constexpr, BLOCK_B: tl.constexpr):
    # this program's hidden units and the batch rows (every one), with their masks
    units = tl.program_id(0) * BLOCK_U + tl.arange(0, BLOCK_U)
    rows = tl.arange(0, BLOCK_B)
    return units, units < H, rows, rows < B


@triton.jit
def _ke_grid_h(h_ptr, rows, rmask, k0, H, BLOCK_K: tl.constexpr):
    # a (BLOCK_B, BLOCK_K) chunk of every row's h, read past L1 (other programs wrote it last step), with
    # its K offsets and mask
    ks = k0 + tl.arange(0, BLOCK_K)
    kmask = ks < H
    h = tl.load(h_ptr + rows[:, None] * H + ks[None, :], mask=rmask[:, None] & kmask[None, :], other=0.0, cache_modifier=".cg")
    return h, ks, kmask


@triton.jit
def _ke_lstm_grid_kernel(
    proj_ptr, w_hh_ptr, b_hh_ptr, h_ptr, c_ptr, out_ptr, counter_ptr, out_t_stride, out_b_stride,
    T, B, H, step_begin, step_end,
    HAS_B_HH: tl.constexpr, GRID_SYNC: tl.constexpr, USE_DOT: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_U: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # program (p, d) owns hidden units [p BLOCK_U, (p + 1) BLOCK_U) of direction d (1: reversed), every
    # batch row, all four gates (i, f, g, o): each step reads every row's whole h, so a direction's programs
    # meet at a grid barrier between steps; the directions' inputs, weights, states and counters are stacked
    d = tl.program_id(1)
    proj_ptr += d * T * B * 4 * H
    w_hh_ptr += d * 4 * H * H
    b_hh_ptr += d * 4 * H
    h_ptr += d * 2 * B * H
    c_ptr += d * 2 * B * H
    out_ptr += d * H
    counter_ptr += d
    units, umask, rows, rmask = _ke_grid_lanes(H, B, BLOCK_U, BLOCK_B)
    # c is this program's alone: it stays in registers, read from its slot before the steps, written after
    c = _ke_grid_tile(c_ptr + (step_begin % 2) * B * H, rows, units, rmask, umask, H)
    for step in range(step_begin, step_end):
        t, src, dst = _ke_grid_step(step, T, B, H, d)
        proj = proj_ptr + t * B * 4 * H
        acc_i = _ke_gate_input(proj, b_hh_ptr, 0, rows, units, rmask, umask, H, 4, HAS_B_HH)
        acc_f = _ke_gate_input(proj, b_hh_ptr, 1, rows, units, rmask, umask, H, 4, HAS_B_HH)
        acc_g = _ke_gate_input(proj, b_hh_ptr, 2, rows, units, rmask, umask, H, 4, HAS_B_HH)
        acc_o = _ke_gate_input(proj, b_hh_ptr, 3, rows, units, rmask, umask, H, 4, HAS_B_HH)
        for k0 in range(0, H, BLOCK_K):
            h, ks, kmask = _ke_grid_h(h_ptr + src, rows, rmask, k0, H, BLOCK_K)
            acc_i = _ke_gate_dot(acc_i, h, w_hh_ptr, units, umask, ks, kmask, H, USE_DOT)
            acc_f = _ke_gate_dot(acc_f, h, w_hh_ptr + H * H, units, umask, ks, kmask, H, USE_DOT)
            acc_g = _ke_gate_dot(acc_g, h, w_hh_ptr + 2 * H * H, units, umask, ks, kmask, H, USE_DOT)
            acc_o = _ke_gate_dot(acc_o, h, w_hh_ptr + 3 * H * H, units, umask, ks, kmask, H, USE_DOT)
        c = tl.sigmoid(acc_f) * c + tl.sigmoid(acc_i) * _ke_tanh(acc_g)
        h_new = tl.sigmoid(acc_o) * _ke_tanh(c)
        _ke_grid_store(h_ptr + dst, h_new, rows, units, rmask, umask, H)
        _ke_grid_store(out_ptr + t * out_t_stride, h_new, rows, units, rmask, umask, out_b_stride)
        if GRID_SYNC:
            _ke_grid_barrier(counter_ptr, (step - step_begin + 1) * tl.num_programs(0))
    _ke_grid_store(c_ptr + (step_end % 2) * B * H, c, rows, units, rmask, umask, H)


@triton.jit
def _ke_gru_grid_kernel(
    proj_ptr, w_hh_ptr, b_hh_ptr, h_ptr, out_ptr, counter_ptr, out_t_stride, out_b_stride,
    T, B, H, step_begin, step_end,
    HAS_B_HH: tl.constexpr, GRID_SYNC: tl.constexpr, USE_DOT: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_U: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # program (p, d) owns hidden units [p BLOCK_U, (p + 1) BLOCK_U) of direction d, every batch row, gates
    # r, z, n; a grid barrier a direction between steps (as the LSTM's)
    d = tl.program_id(1)
    proj_ptr += d * T * B * 3 * H
    w_hh_ptr += d * 3 * H * H
    b_hh_ptr += d * 3 * H
    h_ptr += d * 2 * B * H
    out_ptr += d * H
    counter_ptr += d
    units, umask, rows, rmask = _ke_grid_lanes(H, B, BLOCK_U, BLOCK_B)
    # this program's units of h, kept in registers from step to step (the others' read from memory)
    h_prev = _ke_grid_tile(h_ptr + (step_begin % 2) * B * H, rows, units, rmask, umask, H)
    for step in range(step_begin, step_end):
        t, src, dst = _ke_grid_step(step, T, B, H, d)
        proj = proj_ptr + t * B * 3 * H
        acc_r = _ke_gate_input(proj, b_hh_ptr, 0, rows, units, rmask, umask, H, 3, HAS_B_HH)
        acc_z = _ke_gate_input(proj, b_hh_ptr, 1, rows, units, rmask, umask, H, 3, HAS_B_HH)
        hh_n = tl.zeros([BLOCK_B, BLOCK_U], dtype=tl.float32)  # r scales only W_hh h + b_hh of gate n
        if HAS_B_HH:
            hh_n += tl.load(b_hh_ptr + 2 * H + units, mask=umask, other=0.0)[None, :]
        for k0 in range(0, H, BLOCK_K):
            h, ks, kmask = _ke_grid_h(h_ptr + src, rows, rmask, k0, H, BLOCK_K)
            acc_r = _ke_gate_dot(acc_r, h, w_hh_ptr, units, umask, ks, kmask, H, USE_DOT)
            acc_z = _ke_gate_dot(acc_z, h, w_hh_ptr + H * H, units, umask, ks, kmask, H, USE_DOT)
            hh_n = _ke_gate_dot(hh_n, h, w_hh_ptr + 2 * H * H, units, umask, ks, kmask, H, USE_DOT)
        r = tl.sigmoid(acc_r)
        z = tl.sigmoid(acc_z)
        new = _ke_tanh(_ke_grid_tile(proj + 2 * H, rows, units, rmask, umask, 3 * H) + r * hh_n)
        h_prev = (1.0 - z) * new + z * h_prev
        _ke_grid_store(h_ptr + dst, h_prev, rows, units, rmask, umask, H)
        _ke_grid_store(out_ptr + t * out_t_stride, h_prev, rows, units, rmask, umask, out_b_stride)
        if GRID_SYNC:
            _ke_grid_barrier(counter_ptr, (step - step_begin + 1) * tl.num_programs(0))
