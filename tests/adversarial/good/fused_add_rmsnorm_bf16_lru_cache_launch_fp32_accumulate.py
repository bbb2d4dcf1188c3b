# good: the fused residual-add RMSNorm spec in bf16: one program per row adds x and the residual in fp32,
# rounds the sum to bf16 (stored as the second output, and the value normalised, as the reference's
# `total.to(torch.float32)` sees it), takes the row's mean square in fp32, rounds the normalised row to
# bf16 before the weight as the reference does; block and warps from a functools.lru_cache'd function,
# `assert x.is_contiguous()` after `.contiguous()`, outputs `torch.empty_like`
# spec: shipped:fused_add_rmsnorm
import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@functools.lru_cache(maxsize=32)
def launch_config(hidden: int) -> tuple[int, int]:
    block = triton.next_power_of_2(hidden)
    return block, min(max(block // 256, 1), 8)


@triton.jit
def add_rmsnorm_kernel(x_ptr, r_ptr, w_ptr, out_ptr, total_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    total = (x + r).to(tl.bfloat16)
    tl.store(total_ptr + row * N + cols, total, mask=mask)
    h = total.to(tl.float32)
    rstd = tl.rsqrt(tl.sum(h * h, axis=0) / N + eps)
    normed = (h * rstd).to(tl.bfloat16).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * N + cols, (w * normed).to(tl.bfloat16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x, residual):
        x = x.contiguous()
        residual = residual.contiguous()
        assert x.is_contiguous() and residual.is_contiguous()
        hidden = x.shape[-1]
        rows = x.numel() // hidden
        out = torch.empty_like(x)
        total = torch.empty_like(x)
        block, warps = launch_config(hidden)
        add_rmsnorm_kernel[(rows,)](
            x, residual, self.weight, out, total, hidden, self.eps, BLOCK=block, num_warps=warps
        )
        return out, total
