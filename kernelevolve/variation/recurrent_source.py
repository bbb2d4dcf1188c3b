"""Our LSTM and GRU layers, as source text for recurrent seeds (recurrent_seed.py).

Dynamo does not trace PyTorch's RNN modules, so KernelBench's LSTM and GRU problems (L3/35-L3/42) get
no compiler seed. These classes take nn.LSTM's and nn.GRU's place in a copy of the reference:
- the same constructor and parameters (names, shapes, registration order, uniform(-1/sqrt(H), 1/sqrt(H))
  initialisation in that order), so a model built with the same seed holds the same weights;
- per layer and direction, the input projection of the whole sequence is one GEMM, each step one GEMM of
  the hidden state with the projection as its bias, and the gate nonlinearities and state update one
  Triton kernel that writes the step's output in place, which is the next step's hidden state.
Eval mode only: inter-layer dropout is not applied (as PyTorch does in eval mode).

`RNN_STEPS` (a tunable) picks how the steps run: "per_step" launches a GEMM and a cell kernel per step
(host-bound: 3,072 steps in L3/35; permissive seeds are offered as their CUDA-graph replay), "persistent"
launches one kernel per layer and direction whose programs, one per batch row (rows never depend on each
other), run every step: the hidden-to-hidden product as a matrix-vector product from W_hh, the gates and
the state update, h and c alternating between two slots with a barrier between steps: 177 ms on L3/35 on
the H200 (eager 32-54), ten programs each streaming the whole W_hh every step. "grid", the own-kernels
twin's default (strict runs reject the CUDA graphs that rescue per-step launches), splits the hidden units
over programs instead (`RNN_GRID_BLOCK_U` of them, every gate and batch row), both directions of a layer
in one launch, so each program reads only its slice of W_hh and keeps its own c (and its units of h) in
registers; a direction's programs meet at a grid barrier (an atomic counter) between steps, so every
program must be resident at once: the units a program double until the programs fit the SMs, and the
launch is cooperative (the driver fails it rather than start fewer programs than the barrier waits for).
Two units a program, products summed over the whole K (256) at once, took 19.3 ms on L3/35 and 15.5 on
L3/39; 16 a program through tl.dot, 62 and 49 (experiments/recurrent_grid). Triton's interpreter runs programs one
after another, so off the GPU it launches once a step instead of spinning at a barrier.

The GEMMs go through `_ke_rnn_matmul(a, b, out=, bias=)`: cuBLAS in `LIBRARY_RNN_MATMUL` (permissive), our
Triton GEMM (own_gemm.py) in `OWN_RNN_MATMUL`, whose seeds also take the reference's nn.Linear layers as
`_KeLinear` (`OWN_LINEAR_SOURCE`), so a model of recurrent and linear layers does all its work in our
kernels (strict). The states are written into preallocated tensors, not stacked, for the same reason.
"""

from __future__ import annotations

from kernelevolve.variation.compiler.own_gemm import GEMM_SOURCE, GEMM_TUNABLES
from kernelevolve.variation.elementwise_source import TANH_SOURCE

RECURRENT_CLASSES = {"LSTM": "_KeLSTM", "GRU": "_KeGRU"}
STEPS_PER_STEP = 'RNN_STEPS = "per_step"'
STEPS_PERSISTENT = 'RNN_STEPS = "persistent"'
STEPS_GRID = 'RNN_STEPS = "grid"'
LINEAR_CLASS = "_KeLinear"

LIBRARY_RNN_MATMUL = """
def _ke_rnn_matmul(a, b, out=None, bias=None):
    # cuBLAS: (bias +) a @ b, into out when given
    return torch.mm(a, b, out=out) if bias is None else torch.addmm(bias, a, b, out=out)
"""

OWN_RNN_MATMUL = (
    "\n".join([*GEMM_TUNABLES, GEMM_SOURCE])
    + """

def _ke_rnn_matmul(a, b, out=None, bias=None):
    # our Triton GEMM (bias: a vector, or a matrix such as a step's slice of the input projection)
    return _matmul(a, b, out=out, bias=bias)
"""
)

OWN_LINEAR_SOURCE = """

class _KeLinear(nn.Linear):
    # nn.Linear's parameters and initialisation; the product in our GEMM
    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        out = _ke_rnn_matmul(flat, self.weight.t(), bias=self.bias)
        return out.reshape(*x.shape[:-1], out.shape[-1])
"""

RECURRENT_SOURCE = (
    """
RNN_STEPS = "per_step"  # tune: "per_step", "persistent", "grid"
RNN_BLOCK = 256  # tune: 128, 256, 512, 1024
RNN_WARPS = 4  # tune: 2, 4, 8
RNN_SEQ_BLOCK_H = 32  # tune: 16, 32, 64
RNN_SEQ_BLOCK_K = 64  # tune: 32, 64, 128
RNN_SEQ_WARPS = 4  # tune: 2, 4, 8
RNN_GRID_BLOCK_U = 2  # tune: 2, 4, 8, 16, 32
RNN_GRID_BLOCK_K = 256  # tune: 32, 64, 128, 256
RNN_GRID_WARPS = 4  # tune: 2, 4, 8
RNN_GRID_DOT = False  # tune: True, False

"""
    + TANH_SOURCE
    + """

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


class _KeRecurrent(nn.Module):
    GATES = 0

    def __init__(
        self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
        bidirectional=False, proj_size=0, device=None, dtype=None,
    ):
        super().__init__()
        if proj_size:
            raise ValueError("proj_size is not supported")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.directions = 2 if bidirectional else 1
        gate_size = self.GATES * hidden_size
        factory = {"device": device, "dtype": dtype}
        for layer in range(num_layers):  # nn.RNNBase's order: the weights' values follow from it
            layer_input = input_size if layer == 0 else hidden_size * self.directions
            for direction in range(self.directions):
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, hidden_size))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                for name, shape in shapes:
                    setattr(self, f"{name}_l{layer}{suffix}", nn.Parameter(torch.empty(shape, **factory)))
        stdv = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
        for weight in self.parameters():
            nn.init.uniform_(weight, -stdv, stdv)

    def _weights(self, layer, direction):
        suffix = "_reverse" if direction == 1 else ""
        get = lambda name: getattr(self, f"{name}_l{layer}{suffix}", None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")

    def _states(self, hx, batch, like):
        shape = (self.num_layers * self.directions, batch, self.hidden_size)
        return torch.zeros(shape, device=like.device, dtype=like.dtype) if hx is None else hx

    def _run(self, x, h0, c0):
        # x (T, B, I); returns the last layer's output (T, B, D*H) and the final states
        steps, batch = x.shape[0], x.shape[1]
        H, n = self.hidden_size, x.shape[1] * self.hidden_size
        grid = (triton.cdiv(n, RNN_BLOCK),)
        layer_input = x
        h_n = torch.empty((self.num_layers * self.directions, batch, H), device=x.device, dtype=x.dtype)
        c_n = torch.empty_like(h_n) if c0 is not None else None
        # the grid kernels index the stacked projections in 32-bit arithmetic
        fits = steps * batch * self.GATES * H * self.directions < 2**31
        units = self._grid_units(batch, x.device) if RNN_STEPS == "grid" and fits else 0
        for layer in range(self.num_layers):
            out = torch.empty((steps, batch, self.directions * H), device=x.device, dtype=x.dtype)
            if units:
                self._grid_layer(layer, layer_input, h0, c0, out, h_n, c_n, units)
                layer_input = out
                continue
            for direction in range(self.directions):
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, direction)
                flat = layer_input.reshape(steps * batch, layer_input.shape[2])
                projected = _ke_rnn_matmul(flat, w_ih.t(), bias=b_ih).view(steps, batch, -1)
                index = layer * self.directions + direction
                if RNN_STEPS in ("persistent", "grid"):
                    self._persistent(projected, w_hh, b_hh, h0[index], c0, out, direction, index, h_n, c_n)
                    continue
                h = h0[index].contiguous()
                c = c0[index].clone() if c0 is not None else None
                hidden = torch.empty((batch, self.GATES * H), device=x.device, dtype=x.dtype)
                order = range(steps) if direction == 0 else range(steps - 1, -1, -1)
                for t in order:
                    h_new = out[t, :, direction * H : (direction + 1) * H]
                    if c is not None:  # LSTM: this step's projection is the GEMM's bias, b_hh the cell's
                        _ke_rnn_matmul(h, w_hh.t(), out=hidden, bias=projected[t])
                        _ke_lstm_cell_kernel[grid](
                            hidden, hidden if b_hh is None else b_hh, c, h_new, h_new.stride(0), H, n,
                            HAS_B_HH=b_hh is not None, BLOCK=RNN_BLOCK, num_warps=RNN_WARPS,
                        )
                    else:
                        _ke_rnn_matmul(h, w_hh.t(), out=hidden, bias=b_hh)
                        _ke_gru_cell_kernel[grid](
                            projected[t], hidden, h, h.stride(0), h_new, h_new.stride(0), H, n,
                            BLOCK=RNN_BLOCK, num_warps=RNN_WARPS,
                        )
                    h = h_new
                h_n[index].copy_(h)
                if c is not None:
                    c_n[index].copy_(c)
            layer_input = out
        return out, h_n, c_n

    def _persistent(self, projected, w_hh, b_hh, h0, c0, out, direction, index, h_n, c_n):
        # one launch runs every step of this layer and direction; states alternate between two slots
        steps, batch, H = projected.shape[0], projected.shape[1], self.hidden_size
        projected = projected.contiguous()  # the kernels index it as (T, B, gates * H)
        h = torch.empty((2, batch, H), device=out.device, dtype=out.dtype)
        h[0].copy_(h0)
        common = dict(REVERSE=direction == 1, HAS_B_HH=b_hh is not None, BLOCK_H=RNN_SEQ_BLOCK_H, BLOCK_K=RNN_SEQ_BLOCK_K)
        where = (out, direction * H, out.stride(0), out.stride(1), steps, batch, H)
        w_hh = w_hh.contiguous()
        bias = w_hh if b_hh is None else b_hh
        if c0 is not None:
            c = torch.empty_like(h)
            c[0].copy_(c0[index])
            _ke_lstm_sequence_kernel[(batch,)](projected, w_hh, bias, h, c, *where, **common, num_warps=RNN_SEQ_WARPS)
            c_n[index].copy_(c[steps % 2])
        else:
            _ke_gru_sequence_kernel[(batch,)](projected, w_hh, bias, h, *where, **common, num_warps=RNN_SEQ_WARPS)
        h_n[index].copy_(h[steps % 2])

    def _grid_units(self, batch, device):
        # the grid barrier needs every program resident at once (one per SM at most, both directions'
        # together): RNN_GRID_BLOCK_U units a program, doubled until they fit; 0 (the one-program-a-row
        # kernel) for a batch over one tile
        if batch > 128:
            return 0
        units = RNN_GRID_BLOCK_U
        if device.type == "cuda":
            sms = torch.cuda.get_device_properties(device).multi_processor_count
            while triton.cdiv(self.hidden_size, units) * self.directions > sms:
                units *= 2
        return units

    def _grid_layer(self, layer, layer_input, h0, c0, out, h_n, c_n, units):
        # one launch runs every step of both directions: programs split each direction's hidden units and
        # meet at its grid barrier between steps; the directions' projections, W_hh, b_hh and states are
        # stacked so a program finds its own by its direction's index
        steps, batch, H, dirs = layer_input.shape[0], layer_input.shape[1], self.hidden_size, self.directions
        size, first, like = self.GATES * H, layer * dirs, dict(device=out.device, dtype=out.dtype)
        flat = layer_input.reshape(steps * batch, layer_input.shape[2])
        projected = torch.empty((dirs, steps * batch, size), **like)
        w_hh = torch.empty((dirs, size, H), **like)
        b_hh = torch.empty((dirs, size), **like) if self.bias else w_hh
        for direction in range(dirs):
            w_ih, w_hh_d, b_ih, b_hh_d = self._weights(layer, direction)
            _ke_rnn_matmul(flat, w_ih.t(), out=projected[direction], bias=b_ih)
            w_hh[direction].copy_(w_hh_d)
            if self.bias:
                b_hh[direction].copy_(b_hh_d)
        h = torch.empty((dirs, 2, batch, H), **like)
        h[:, 0].copy_(h0[first : first + dirs])
        states = (h,)
        if c0 is not None:
            c = torch.empty_like(h)
            c[:, 0].copy_(c0[first : first + dirs])
            states = (h, c)
        kernel = _ke_lstm_grid_kernel if c0 is not None else _ke_gru_grid_kernel
        # Triton's interpreter runs programs one after another: off the GPU a launch a step, no barrier
        on_gpu = out.device.type == "cuda"
        counter = torch.zeros(dirs, device=out.device, dtype=torch.int32)
        use_dot = RNN_GRID_DOT and units >= 16
        rows = triton.next_power_of_2(batch)
        blocks = dict(USE_DOT=use_dot, BLOCK_B=max(16, rows) if use_dot else rows, BLOCK_U=units, BLOCK_K=RNN_GRID_BLOCK_K)
        # a cooperative launch: the driver starts every program at once or fails the launch (too many for
        # the SMs this process may use, as under MPS), so the barrier can never wait on a program not running
        launch = dict(launch_cooperative_grid=True) if on_gpu else {}
        for begin, end in [(0, steps)] if on_gpu else [(step, step + 1) for step in range(steps)]:
            kernel[(triton.cdiv(H, units), dirs)](
                projected, w_hh, b_hh, *states, out, counter, out.stride(0), out.stride(1), steps, batch, H,
                begin, end, HAS_B_HH=bool(self.bias), GRID_SYNC=on_gpu, **blocks, num_warps=RNN_GRID_WARPS, **launch,
            )
        h_n[first : first + dirs].copy_(h[:, steps % 2])
        if c0 is not None:
            c_n[first : first + dirs].copy_(c[:, steps % 2])

    def _sequence(self, x):
        return x.transpose(0, 1).contiguous() if self.batch_first else x.contiguous()

    def _output(self, out):
        return out.transpose(0, 1).contiguous() if self.batch_first else out


class _KeLSTM(_KeRecurrent):
    GATES = 4

    def forward(self, x, hx=None):
        seq = self._sequence(x)
        h0, c0 = (None, None) if hx is None else hx
        out, h_n, c_n = self._run(seq, self._states(h0, seq.shape[1], seq), self._states(c0, seq.shape[1], seq))
        return self._output(out), (h_n, c_n)


class _KeGRU(_KeRecurrent):
    GATES = 3

    def forward(self, x, hx=None):
        seq = self._sequence(x)
        out, h_n, _ = self._run(seq, self._states(hx, seq.shape[1], seq), None)
        return self._output(out), h_n
"""
)
