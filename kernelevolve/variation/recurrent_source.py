"""Our LSTM and GRU layers, as source text for recurrent seeds (recurrent_seed.py).

Dynamo does not trace PyTorch's RNN modules, so KernelBench's LSTM and GRU problems (L3/35-L3/42) get
no compiler seed. These classes take nn.LSTM's and nn.GRU's place in a copy of the reference:
- the same constructor and parameters (names, shapes, registration order, uniform(-1/sqrt(H), 1/sqrt(H))
  initialisation in that order), so a model built with the same seed holds the same weights;
- per layer and direction, the input projection of the whole sequence is one GEMM, each step one GEMM of
  the hidden state with the projection as its bias, and the gate nonlinearities and state update one
  Triton kernel that writes the step's output in place, which is the next step's hidden state.
Eval mode only: inter-layer dropout is not applied (as PyTorch does in eval mode).

The GEMMs go through `_ke_rnn_matmul(a, b, out=, bias=)`: cuBLAS in `LIBRARY_RNN_MATMUL` (permissive), our
Triton GEMM (own_gemm.py) in `OWN_RNN_MATMUL`, whose seeds also take the reference's nn.Linear layers as
`_KeLinear` (`OWN_LINEAR_SOURCE`), so a model of recurrent and linear layers does all its work in our
kernels (strict). The states are written into preallocated tensors, not stacked, for the same reason.
"""

from __future__ import annotations

from kernelevolve.variation.compiler.own_gemm import GEMM_SOURCE, GEMM_TUNABLES
from kernelevolve.variation.elementwise_source import TANH_SOURCE

RECURRENT_CLASSES = {"LSTM": "_KeLSTM", "GRU": "_KeGRU"}
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
RNN_BLOCK = 256  # tune: 128, 256, 512, 1024
RNN_WARPS = 4  # tune: 2, 4, 8

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
        for layer in range(self.num_layers):
            out = torch.empty((steps, batch, self.directions * H), device=x.device, dtype=x.dtype)
            for direction in range(self.directions):
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, direction)
                flat = layer_input.reshape(steps * batch, layer_input.shape[2])
                projected = _ke_rnn_matmul(flat, w_ih.t(), bias=b_ih).view(steps, batch, -1)
                index = layer * self.directions + direction
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
