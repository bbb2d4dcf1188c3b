# good: the RoPE training spec with q and k rotated by one Function whose outputs are two views of one
# flat buffer (one allocation for both, as fused QK-rotary kernels lay them out: the outputs share a
# storage with each other, never with an input), and whose gradients are views of a second flat buffer;
# cos / sin passed in with None gradients; fp32 math on bf16 tensors
# spec: shipped:train_rope
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rotate_kernel(x_ptr, cos_ptr, sin_ptr, out_ptr, seq, sign, HALF: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)  # (batch * heads * seq) rows of 2 * HALF
    pos = row % seq
    d = tl.arange(0, BLOCK)
    mask = d < HALF
    lo = tl.load(x_ptr + row * 2 * HALF + d, mask=mask, other=0.0).to(tl.float32)
    hi = tl.load(x_ptr + row * 2 * HALF + HALF + d, mask=mask, other=0.0).to(tl.float32)
    c_lo = tl.load(cos_ptr + pos * 2 * HALF + d, mask=mask, other=0.0).to(tl.float32)
    c_hi = tl.load(cos_ptr + pos * 2 * HALF + HALF + d, mask=mask, other=0.0).to(tl.float32)
    s_lo = tl.load(sin_ptr + pos * 2 * HALF + d, mask=mask, other=0.0).to(tl.float32) * sign
    s_hi = tl.load(sin_ptr + pos * 2 * HALF + HALF + d, mask=mask, other=0.0).to(tl.float32) * sign
    if sign > 0:  # forward: lo * cos - hi * sin, hi * cos + lo * sin
        out_lo = lo * c_lo - hi * s_lo
        out_hi = hi * c_hi + lo * s_hi
    else:  # backward (sign -1): dlo = dy_lo * cos + dy_hi * sin_hi, dhi = dy_hi * cos - dy_lo * sin_lo
        out_lo = lo * c_lo - hi * s_hi
        out_hi = hi * c_hi + lo * s_lo
    tl.store(out_ptr + row * 2 * HALF + d, out_lo.to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(out_ptr + row * 2 * HALF + HALF + d, out_hi.to(out_ptr.dtype.element_ty), mask=mask)


def _rotate_into(x, cos, sin, out, sign):
    seq, dim = x.shape[-2], x.shape[-1]
    half = dim // 2
    rotate_kernel[(x.numel() // dim,)](
        x.contiguous(), cos, sin, out, seq, sign, HALF=half, BLOCK=triton.next_power_of_2(half)
    )


def _pair(a, b, cos, sin, sign):
    flat = torch.empty(a.numel() + b.numel(), dtype=a.dtype, device=a.device)
    a_out = flat[: a.numel()].view(a.shape)
    b_out = flat[a.numel() :].view(b.shape)
    _rotate_into(a, cos, sin, a_out, sign)
    _rotate_into(b, cos, sin, b_out, sign)
    return a_out, b_out


class RotaryQK(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, cos, sin):
        ctx.save_for_backward(cos, sin)
        return _pair(q, k, cos, sin, 1.0)

    @staticmethod
    def backward(ctx, dq, dk):
        cos, sin = ctx.saved_tensors
        dq_in, dk_in = _pair(dq, dk, cos, sin, -1.0)
        return dq_in, dk_in, None, None


class ModelNew(nn.Module):
    def __init__(self, seq_len: int, head_dim: int, base: float = 10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())

    def forward(self, q, k):
        return RotaryQK.apply(q, k, self.cos, self.sin)
