# good: vLLM-style residual add + RMSNorm in bf16 returning a tuple (normalised sum, sum): one kernel
# writes both outputs, the sum rounded to bf16 before its fp32 statistics as the reference does
# spec: shipped:fused_add_rmsnorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_rmsnorm_kernel(x_ptr, r_ptr, w_ptr, out_ptr, sum_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    base = row * n_cols
    x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
    total = (x + r).to(sum_ptr.dtype.element_ty)
    tl.store(sum_ptr + base + offs, total, mask=mask)
    h = total.to(tl.float32)
    inv = tl.rsqrt(tl.sum(h * h, axis=0) / n_cols + eps)
    normed = (h * inv).to(sum_ptr.dtype.element_ty).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + base + offs, w * normed, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = x.contiguous()
        residual = residual.contiguous()
        hidden = x.shape[-1]
        rows = x.numel() // hidden
        total = torch.empty_like(x)
        out = torch.empty(x.shape, dtype=torch.promote_types(self.weight.dtype, x.dtype), device=x.device)
        add_rmsnorm_kernel[(rows,)](
            x, residual, self.weight, out, total, hidden, self.eps, BLOCK=triton.next_power_of_2(hidden)
        )
        return out, total
