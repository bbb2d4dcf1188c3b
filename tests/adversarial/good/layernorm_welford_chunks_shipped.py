# good: the shipped LayerNorm over rows up to 1500 wide with a fixed 256 block: one program per row, a
# first pass merging per-block Welford statistics (count, mean, M2, Chan's formula), a second pass
# normalising and applying the affine
# spec: shipped:layernorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ln_welford(x_ptr, w_ptr, b_ptr, y_ptr, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * n
    count = 0.0
    mean = 0.0
    m2 = 0.0
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n
        x = tl.load(x_row + cols, mask=mask, other=0.0)
        k = tl.sum(mask.to(tl.float32), axis=0)
        bm = tl.sum(x, axis=0) / k
        d = tl.where(mask, x - bm, 0.0)
        bm2 = tl.sum(d * d, axis=0)
        total = count + k
        delta = bm - mean
        mean = mean + delta * (k / total)
        m2 = m2 + bm2 + delta * delta * (count * k / total)
        count = total
    rstd = 1.0 / tl.sqrt(m2 / n + eps)
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n
        x = tl.load(x_row + cols, mask=mask, other=0.0)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0)
        tl.store(y_ptr + row * n + cols, (x - mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, n = x.shape
        y = torch.empty_like(x)
        ln_welford[(rows,)](x, self.ln.weight, self.ln.bias, y, n, self.ln.eps, BLOCK=256)
        return y
