# good: the RoPE training spec (bf16 q and k with different head counts) with one launch covering both
# tensors: the grid's first q_rows programs rotate q's rows and the rest k's, each branch on the program
# id reading its own pointer; the autograd.Function's backward launches the same kernel with a constexpr
# sign that rotates by -sin; cos/sin the module's fp32 buffers
# spec: shipped:train_rope
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rotate_row(
    src_ptr,
    dst_ptr,
    cos_ptr,
    sin_ptr,
    row,
    seq_len,
    HALF: tl.constexpr,
    BLOCK: tl.constexpr,
    SIGN: tl.constexpr,
):
    pos = row % seq_len
    d = tl.arange(0, BLOCK)
    m = d < HALF
    base = row.to(tl.int64) * (2 * HALF)
    x1 = tl.load(src_ptr + base + d, mask=m, other=0.0).to(tl.float32)
    x2 = tl.load(src_ptr + base + HALF + d, mask=m, other=0.0).to(tl.float32)
    c1 = tl.load(cos_ptr + pos * 2 * HALF + d, mask=m, other=0.0)
    c2 = tl.load(cos_ptr + pos * 2 * HALF + HALF + d, mask=m, other=0.0)
    s1 = tl.load(sin_ptr + pos * 2 * HALF + d, mask=m, other=0.0) * SIGN
    s2 = tl.load(sin_ptr + pos * 2 * HALF + HALF + d, mask=m, other=0.0) * SIGN
    if SIGN > 0:
        y1 = x1 * c1 - x2 * s1
        y2 = x2 * c2 + x1 * s2
    else:  # the transpose of the rotation: each half takes the other half's sine
        y1 = x1 * c1 - x2 * s2
        y2 = x2 * c2 + x1 * s1
    tl.store(dst_ptr + base + d, y1.to(dst_ptr.dtype.element_ty), mask=m)
    tl.store(dst_ptr + base + HALF + d, y2.to(dst_ptr.dtype.element_ty), mask=m)


@triton.jit
def rope_qk_kernel(
    q_ptr,
    k_ptr,
    qo_ptr,
    ko_ptr,
    cos_ptr,
    sin_ptr,
    q_rows,
    seq_len,
    HALF: tl.constexpr,
    BLOCK: tl.constexpr,
    SIGN: tl.constexpr,
):
    pid = tl.program_id(0)
    if pid < q_rows:
        _rotate_row(q_ptr, qo_ptr, cos_ptr, sin_ptr, pid, seq_len, HALF, BLOCK, SIGN)
    else:
        _rotate_row(k_ptr, ko_ptr, cos_ptr, sin_ptr, pid - q_rows, seq_len, HALF, BLOCK, SIGN)


def _rope_pair(a, b, cos, sin, sign):
    a, b = a.contiguous(), b.contiguous()
    head_dim, seq_len = a.shape[-1], a.shape[-2]
    a_out, b_out = torch.empty_like(a), torch.empty_like(b)
    a_rows, b_rows = a.numel() // head_dim, b.numel() // head_dim
    rope_qk_kernel[(a_rows + b_rows,)](
        a,
        b,
        a_out,
        b_out,
        cos,
        sin,
        a_rows,
        seq_len,
        HALF=head_dim // 2,
        BLOCK=triton.next_power_of_2(head_dim // 2),
        SIGN=sign,
    )
    return a_out, b_out


class RoPEPair(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, cos, sin):
        ctx.save_for_backward(cos, sin)
        return _rope_pair(q, k, cos, sin, 1)

    @staticmethod
    def backward(ctx, dq, dk):
        cos, sin = ctx.saved_tensors
        gq, gk = _rope_pair(dq, dk, cos, sin, -1)
        return gq, gk, None, None


class ModelNew(nn.Module):
    def __init__(self, seq_len: int, head_dim: int, base: float = 10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return RoPEPair.apply(q, k, self.cos.float(), self.sin.float())
