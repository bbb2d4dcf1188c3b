"""Our LSTM and GRU cells for the recurrent seeds' per-step and persistent runs (recurrent.py says when
each runs): a cell kernel for one step's gates and state update after the step's GEMM, and sequence
kernels whose programs, one per batch row, run every step of a layer and direction, W_hh's products as
matrix-vector products. `# fmt: off` keeps the layout candidates have; constexpr branches are if/else
(SIM108).
"""
# fmt: off
# ruff: noqa: SIM108

import triton
import triton.language as tl

from kernelevolve.variation.kernels.tanh import _ke_tanh


@triton.jit
def _ke_lstm_gate(gates_ptr, b_hh_ptr, base, col, mask, HAS_B_HH: tl.constexpr):
    # one gate's pre-activation: the GEMM's, plus b_hh where the layer has it
    gate = tl.load(gates_ptr + base, mask=mask, other=0.0)
    if HAS_B_HH:
        gate += tl.load(b_hh_ptr + col, mask=mask, other=0.0)
    return gate


@triton.jit
def _ke_lstm_cell_kernel(gates_ptr, b_hh_ptr, c_ptr, h_ptr, h_row_stride, H, n, HAS_B_HH: tl.constexpr, BLOCK: tl.constexpr):
    # gates (B, 4H) = x W_ih^T + b_ih + h W_hh^T, in PyTorch's order i, f, g, o; b_hh added here
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    row = offs // H
    col = offs % H
    base = row * 4 * H + col
    i = tl.sigmoid(_ke_lstm_gate(gates_ptr, b_hh_ptr, base, col, mask, HAS_B_HH))
    f = tl.sigmoid(_ke_lstm_gate(gates_ptr, b_hh_ptr, base + H, col + H, mask, HAS_B_HH))
    g = _ke_tanh(_ke_lstm_gate(gates_ptr, b_hh_ptr, base + 2 * H, col + 2 * H, mask, HAS_B_HH))
    o = tl.sigmoid(_ke_lstm_gate(gates_ptr, b_hh_ptr, base + 3 * H, col + 3 * H, mask, HAS_B_HH))
    c = f * tl.load(c_ptr + offs, mask=mask, other=0.0) + i * g
    tl.store(c_ptr + offs, c, mask=mask)
    tl.store(h_ptr + row * h_row_stride + col, o * _ke_tanh(c), mask=mask)


@triton.jit
def _ke_gru_cell_kernel(
    x_ptr, hh_ptr, h_prev_ptr, h_prev_row_stride, h_ptr, h_row_stride, H, n, BLOCK: tl.constexpr
):
    # x (B, 3H) = x W_ih^T + b_ih, hh (B, 3H) = h W_hh^T + b_hh, in PyTorch's order r, z, n
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    row = offs // H
    col = offs % H
    base = row * 3 * H + col
    r = tl.sigmoid(tl.load(x_ptr + base, mask=mask, other=0.0) + tl.load(hh_ptr + base, mask=mask, other=0.0))
    z = tl.sigmoid(
        tl.load(x_ptr + base + H, mask=mask, other=0.0) + tl.load(hh_ptr + base + H, mask=mask, other=0.0)
    )
    new = _ke_tanh(
        tl.load(x_ptr + base + 2 * H, mask=mask, other=0.0) + r * tl.load(hh_ptr + base + 2 * H, mask=mask, other=0.0)
    )
    h_prev = tl.load(h_prev_ptr + row * h_prev_row_stride + col, mask=mask, other=0.0)
    tl.store(h_ptr + row * h_row_stride + col, (1.0 - z) * new + z * h_prev, mask=mask)


@triton.jit
def _ke_matvec(acc, w_ptr, h_ptr, units, umask, H, BLOCK_K: tl.constexpr):
    # acc + W[units, :] @ h, W row-major (H columns); h read past L1: other threads wrote it last step
    for k0 in range(0, H, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        kmask = ks < H
        h = tl.load(h_ptr + ks, mask=kmask, other=0.0, cache_modifier=".cg")
        w = tl.load(w_ptr + units[:, None] * H + ks[None, :], mask=umask[:, None] & kmask[None, :], other=0.0)
        acc += tl.sum(w * h[None, :], axis=1)
    return acc


@triton.jit
def _ke_step_slots(step, row, T, B, H, REVERSE: tl.constexpr):
    # the time index a step reads, and the row's state offsets it reads (slot step % 2) and writes
    if REVERSE:
        t = T - 1 - step
    else:
        t = step
    return t, (step % 2) * B * H + row * H, ((step + 1) % 2) * B * H + row * H


@triton.jit
def _ke_lstm_sequence_kernel(
    proj_ptr, w_hh_ptr, b_hh_ptr, h_ptr, c_ptr, out_ptr, out_col, out_t_stride, out_b_stride, T, B, H,
    REVERSE: tl.constexpr, HAS_B_HH: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # one batch row, every step: gates (4H) = proj[t] (x W_ih^T + b_ih) + W_hh h (+ b_hh), order i, f, g, o;
    # h and c read from slot step % 2 and written to the other
    row = tl.program_id(0)
    for step in range(T):
        t, src, dst = _ke_step_slots(step, row, T, B, H, REVERSE)
        proj = proj_ptr + (t * B + row) * 4 * H
        for j0 in range(0, H, BLOCK_H):
            units = j0 + tl.arange(0, BLOCK_H)
            umask = units < H
            acc_i = tl.load(proj + units, mask=umask, other=0.0)
            acc_f = tl.load(proj + H + units, mask=umask, other=0.0)
            acc_g = tl.load(proj + 2 * H + units, mask=umask, other=0.0)
            acc_o = tl.load(proj + 3 * H + units, mask=umask, other=0.0)
            if HAS_B_HH:
                acc_i += tl.load(b_hh_ptr + units, mask=umask, other=0.0)
                acc_f += tl.load(b_hh_ptr + H + units, mask=umask, other=0.0)
                acc_g += tl.load(b_hh_ptr + 2 * H + units, mask=umask, other=0.0)
                acc_o += tl.load(b_hh_ptr + 3 * H + units, mask=umask, other=0.0)
            acc_i = _ke_matvec(acc_i, w_hh_ptr, h_ptr + src, units, umask, H, BLOCK_K)
            acc_f = _ke_matvec(acc_f, w_hh_ptr + H * H, h_ptr + src, units, umask, H, BLOCK_K)
            acc_g = _ke_matvec(acc_g, w_hh_ptr + 2 * H * H, h_ptr + src, units, umask, H, BLOCK_K)
            acc_o = _ke_matvec(acc_o, w_hh_ptr + 3 * H * H, h_ptr + src, units, umask, H, BLOCK_K)
            c_prev = tl.load(c_ptr + src + units, mask=umask, other=0.0, cache_modifier=".cg")
            c = tl.sigmoid(acc_f) * c_prev + tl.sigmoid(acc_i) * _ke_tanh(acc_g)
            h = tl.sigmoid(acc_o) * _ke_tanh(c)
            tl.store(c_ptr + dst + units, c, mask=umask)
            tl.store(h_ptr + dst + units, h, mask=umask)
            tl.store(out_ptr + t * out_t_stride + row * out_b_stride + out_col + units, h, mask=umask)
        tl.debug_barrier()  # this step's h and c, written by all threads, before the next step reads them


@triton.jit
def _ke_gru_sequence_kernel(
    proj_ptr, w_hh_ptr, b_hh_ptr, h_ptr, out_ptr, out_col, out_t_stride, out_b_stride, T, B, H,
    REVERSE: tl.constexpr, HAS_B_HH: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # one batch row, every step: r, z from proj[t] + W_hh h (+ b_hh), n = tanh(proj_n + r (W_hn h + b_hn)),
    # h = (1 - z) n + z h_prev; h read from slot step % 2 and written to the other
    row = tl.program_id(0)
    for step in range(T):
        t, src, dst = _ke_step_slots(step, row, T, B, H, REVERSE)
        proj = proj_ptr + (t * B + row) * 3 * H
        for j0 in range(0, H, BLOCK_H):
            units = j0 + tl.arange(0, BLOCK_H)
            umask = units < H
            acc_r = tl.load(proj + units, mask=umask, other=0.0)
            acc_z = tl.load(proj + H + units, mask=umask, other=0.0)
            hh_n = tl.zeros([BLOCK_H], dtype=tl.float32)
            if HAS_B_HH:
                acc_r += tl.load(b_hh_ptr + units, mask=umask, other=0.0)
                acc_z += tl.load(b_hh_ptr + H + units, mask=umask, other=0.0)
                hh_n += tl.load(b_hh_ptr + 2 * H + units, mask=umask, other=0.0)
            acc_r = _ke_matvec(acc_r, w_hh_ptr, h_ptr + src, units, umask, H, BLOCK_K)
            acc_z = _ke_matvec(acc_z, w_hh_ptr + H * H, h_ptr + src, units, umask, H, BLOCK_K)
            hh_n = _ke_matvec(hh_n, w_hh_ptr + 2 * H * H, h_ptr + src, units, umask, H, BLOCK_K)
            r = tl.sigmoid(acc_r)
            z = tl.sigmoid(acc_z)
            new = _ke_tanh(tl.load(proj + 2 * H + units, mask=umask, other=0.0) + r * hh_n)
            h_prev = tl.load(h_ptr + src + units, mask=umask, other=0.0, cache_modifier=".cg")
            h = (1.0 - z) * new + z * h_prev
            tl.store(h_ptr + dst + units, h, mask=umask)
            tl.store(out_ptr + t * out_t_stride + row * out_b_stride + out_col + units, h, mask=umask)
        tl.debug_barrier()  # this step's h, written by all threads, before the next step reads it
