# good: the RoPE training spec with one kernel for both directions: the backward is the forward with sin
# negated, chosen by a constexpr flag (no PyTorch negation); q and k in one autograd.Function whose apply
# also takes the cos / sin buffers (None returned for them); the launch a closure made by a factory per
# direction, one program per (batch * head, position) row, fp32 math on bf16
# spec: shipped:train_rope
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rope_rows(
    x_ptr, cos_ptr, sin_ptr, y_ptr, seq, D: tl.constexpr, HALF: tl.constexpr, BACKWARD: tl.constexpr
):
    row = tl.program_id(0)
    pos = row % seq
    i = tl.arange(0, HALF)
    x1 = tl.load(x_ptr + row * D + i).to(tl.float32)
    x2 = tl.load(x_ptr + row * D + HALF + i).to(tl.float32)
    c1 = tl.load(cos_ptr + pos * D + i)
    c2 = tl.load(cos_ptr + pos * D + HALF + i)
    s1 = tl.load(sin_ptr + pos * D + i)
    s2 = tl.load(sin_ptr + pos * D + HALF + i)
    if BACKWARD:
        # d/dx1 gets dy1 * c1 + dy2 * s2; d/dx2 gets dy2 * c2 - dy1 * s1
        y1 = x1 * c1 + x2 * s2
        y2 = x2 * c2 - x1 * s1
    else:
        y1 = x1 * c1 - x2 * s1
        y2 = x2 * c2 + x1 * s2
    tl.store(y_ptr + row * D + i, y1.to(y_ptr.dtype.element_ty))
    tl.store(y_ptr + row * D + HALF + i, y2.to(y_ptr.dtype.element_ty))


def make_rotary(backward: bool):
    def run(x, cos, sin):
        x = x.contiguous()
        y = torch.empty_like(x)
        seq, d = x.shape[-2], x.shape[-1]
        rope_rows[(x.numel() // d,)](x, cos, sin, y, seq, D=d, HALF=d // 2, BACKWARD=backward)
        return y

    return run


rotate_fwd = make_rotary(False)
rotate_bwd = make_rotary(True)


class Rotary(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, cos, sin):
        cos, sin = cos.contiguous(), sin.contiguous()
        ctx.save_for_backward(cos, sin)
        return rotate_fwd(q, cos, sin), rotate_fwd(k, cos, sin)

    @staticmethod
    def backward(ctx, dq, dk):
        cos, sin = ctx.saved_tensors
        return rotate_bwd(dq, cos, sin), rotate_bwd(dk, cos, sin), None, None


class ModelNew(nn.Module):
    def __init__(self, seq_len: int, head_dim: int, base: float = 10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())

    def forward(self, q, k):
        return Rotary.apply(q, k, self.cos, self.sin)
