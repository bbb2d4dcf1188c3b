# good: the RoPE training spec with rotate_half done in registers by tl.gather of each element's partner
# (index (d + half) % head_dim); one kernel with a constexpr BACKWARD flag: forward y = x cos +
# rotate_half(x) sin, backward dx = dy cos + rotate_half^T(dy sin) (the transpose of the rotation moves the
# minus sign to the other half), fp32 math on bf16 tensors; q and k through one autograd.Function
# spec: shipped:train_rope
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rope_kernel(
    x_ptr, cos_ptr, sin_ptr, out_ptr, rows, seq, head_dim,
    BACKWARD: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)  # rows of (batch * heads * seq)
    d = tl.arange(0, BLOCK_D)
    half = head_dim // 2
    mask = (r[:, None] < rows) & (d[None, :] < head_dim)
    pos = r % seq
    x = tl.load(x_ptr + r[:, None] * head_dim + d[None, :], mask=mask, other=0.0).to(tl.float32)
    c = tl.load(cos_ptr + pos[:, None] * head_dim + d[None, :], mask=mask, other=0.0).to(tl.float32)
    s = tl.load(sin_ptr + pos[:, None] * head_dim + d[None, :], mask=mask, other=0.0).to(tl.float32)
    partner = tl.broadcast_to(tl.where(d < head_dim, (d + half) % head_dim, d)[None, :], (BLOCK_R, BLOCK_D))
    first_half = d[None, :] < half
    if BACKWARD:
        moved = tl.gather(x * s, partner, 1)
        y = x * c + tl.where(first_half, moved, -moved)
    else:
        moved = tl.gather(x, partner, 1)
        y = x * c + tl.where(first_half, -moved, moved) * s
    tl.store(out_ptr + r[:, None] * head_dim + d[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, backward: bool) -> torch.Tensor:
    x = x.contiguous()
    seq, head_dim = x.shape[-2], x.shape[-1]
    out = torch.empty_like(x)
    rows = x.numel() // head_dim
    block_r = 8
    rope_kernel[(triton.cdiv(rows, block_r),)](
        x, cos, sin, out, rows, seq, head_dim,
        BACKWARD=backward, BLOCK_R=block_r, BLOCK_D=triton.next_power_of_2(head_dim),
    )  # fmt: skip
    return out


class _Rope(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, cos, sin):
        ctx.save_for_backward(cos, sin)
        return rope(x, cos, sin, backward=False)

    @staticmethod
    def backward(ctx, dy):
        cos, sin = ctx.saved_tensors
        return rope(dy, cos, sin, backward=True), None, None


class ModelNew(nn.Module):
    def __init__(self, seq_len: int, head_dim: int, base: float = 10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        cos, sin = self.cos.contiguous(), self.sin.contiguous()
        return _Rope.apply(q, cos, sin), _Rope.apply(k, cos, sin)
