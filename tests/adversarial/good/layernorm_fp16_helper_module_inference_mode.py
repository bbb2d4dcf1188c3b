# good: a helper nn.Module defined in the same file (TritonLayerNorm, holding the weight and bias under
# the reference's names) used as ModelNew's `ln`, its forward under `torch.inference_mode()`; two-pass
# fp32 statistics over column chunks for fp16 rows (KernelBench fp16 inputs)
# spec: kb_half_layernorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _ln_chunked(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row.to(tl.int64) * n_cols
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + base + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc2 = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + base + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        d = tl.where(cols < n_cols, x - mean, 0.0)
        acc2 += d * d
    rstd = tl.rsqrt(tl.sum(acc2, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = cols < n_cols
        x = tl.load(x_ptr + base + cols, mask=m, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=m, other=0.0).to(tl.float32)
        tl.store(y_ptr + base + cols, ((x - mean) * rstd * w + b).to(tl.float16), mask=m)


class TritonLayerNorm(nn.Module):
    def __init__(self, features: int, eps: float = 1e-5, block: int = 32):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))
        self.eps = eps
        self.block = block

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.numel() // x.shape[-1]
        out = torch.empty_like(x)
        _ln_chunked[(rows,)](
            x.contiguous(), self.weight, self.bias, out, x.shape[-1], self.eps, BLOCK=self.block
        )
        return out


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.ln = TritonLayerNorm(features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.inference_mode():
            return self.ln(x)
