"""Our LSTM and GRU layers, pasted into recurrent seeds (recurrent_seed.py) in nn.LSTM's and nn.GRU's place.

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
the H200 (eager 32-54), ten programs each streaming the whole W_hh every step (recurrent_steps.py). "grid",
the own-kernels twin's default (strict runs reject the CUDA graphs that rescue per-step launches), splits
the hidden units over programs instead (`RNN_GRID_BLOCK_U` of them, every gate and batch row), both
directions of a layer in one launch, so each program reads only its slice of W_hh and keeps its own c (and
its units of h) in registers; a direction's programs meet at a grid barrier (an atomic counter) between
steps, so every program must be resident at once: the units a program double until the programs fit the
SMs, and the launch is cooperative (the driver fails it rather than start fewer programs than the barrier
waits for) (recurrent_grid.py). Two units a program, products summed over the whole K (256) at once, took
19.3 ms on L3/35 and 15.5 on L3/39; 16 a program through tl.dot, 62 and 49 (experiments/recurrent_grid).
Triton's interpreter runs programs one after another, so off the GPU it launches once a step instead of
spinning at a barrier.

The GEMMs go through `_ke_rnn_matmul(a, b, out=, bias=)`, which the seed pastes before this code: cuBLAS
(recurrent_matmul_library.py, imported here for the checkers) or our Triton GEMM (recurrent_matmul_own.py).
The states are written into preallocated tensors, not stacked, so that a strict seed does all its work in
our kernels.

`# fmt: off` keeps the layout candidates have. mypy takes the host code as it is: lists and tuples of
tuples of several lengths (list-item, assignment), and c_n, None for a GRU, indexed only for an LSTM
(index).
"""
# fmt: off
# mypy: disable-error-code="list-item, assignment, index"

import math

import torch
import torch.nn as nn
import triton

from kernelevolve.variation.kernels.recurrent_grid import _ke_gru_grid_kernel, _ke_lstm_grid_kernel
from kernelevolve.variation.kernels.recurrent_matmul_library import _ke_rnn_matmul
from kernelevolve.variation.kernels.recurrent_steps import (
    _ke_gru_cell_kernel,
    _ke_gru_sequence_kernel,
    _ke_lstm_cell_kernel,
    _ke_lstm_sequence_kernel,
)

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


# ke:include tanh


# ke:include recurrent_steps


# ke:include recurrent_grid


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
                for name, shape in shapes:  # (by nn.LSTM's names; the static checks refuse computed setattr)
                    self.register_parameter(f"{name}_l{layer}{suffix}", nn.Parameter(torch.empty(shape, **factory)))
        stdv = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
        for weight in self.parameters():
            nn.init.uniform_(weight, -stdv, stdv)

    def _weights(self, layer, direction):
        suffix = "_reverse" if direction == 1 else ""
        get = lambda name: self._parameters.get(f"{name}_l{layer}{suffix}")  # noqa: E731
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
