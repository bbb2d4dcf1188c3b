# good: KernelBench level-3 LSTM cell, LLM style: both `nn.Linear` projections kept and called (permissive),
# their sum (a fused residual-style add of two fresh tensors) and the whole gate / state update in one
# Triton kernel writing h and c, the hidden size read off `h.shape[1]` into a Python int
# spec: kb_lstm_cell
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def lstm_gates_kernel(gi_ptr, gh_ptr, c_ptr, h_out_ptr, c_out_ptr, B, H, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < B * H
    b = offs // H
    j = offs % H
    base = b * 4 * H + j
    i = tl.load(gi_ptr + base, mask=mask) + tl.load(gh_ptr + base, mask=mask)
    f = tl.load(gi_ptr + base + H, mask=mask) + tl.load(gh_ptr + base + H, mask=mask)
    g = tl.load(gi_ptr + base + 2 * H, mask=mask) + tl.load(gh_ptr + base + 2 * H, mask=mask)
    o = tl.load(gi_ptr + base + 3 * H, mask=mask) + tl.load(gh_ptr + base + 3 * H, mask=mask)
    c = tl.load(c_ptr + offs, mask=mask)
    tg = 2.0 * tl.sigmoid(2.0 * g) - 1.0
    c_next = tl.sigmoid(f) * c + tl.sigmoid(i) * tg
    h_next = tl.sigmoid(o) * (2.0 * tl.sigmoid(2.0 * c_next) - 1.0)
    tl.store(c_out_ptr + offs, c_next, mask=mask)
    tl.store(h_out_ptr + offs, h_next, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.ih = nn.Linear(input_size, 4 * hidden_size)
        self.hh = nn.Linear(hidden_size, 4 * hidden_size)

    def forward(self, x, h, c):
        gi = self.ih(x).contiguous()
        gh = self.hh(h).contiguous()
        c = c.contiguous()
        batch = int(x.shape[0])
        hidden = int(h.shape[1])
        h_next = torch.empty_like(c)
        c_next = torch.empty_like(c)
        total = batch * hidden
        lstm_gates_kernel[(triton.cdiv(total, 128),)](gi, gh, c, h_next, c_next, batch, hidden, BLOCK=128)
        return h_next, c_next
