# good: nn.LayerNorm over rows with the statistics a training kernel would keep: mean and rstd into a
# column buffer made with torch.empty_strided (stride 1 over rows), the output from x.new_empty, the input
# made contiguous inside; a two-pass chunked reduction for rows wider than the block; the module's own
# nn.LayerNorm holds weight and bias
# spec: shipped:layernorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ln_fwd_kernel(x_ptr, w_ptr, b_ptr, y_ptr, stats_ptr, stats_stride, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * cols
    acc = tl.zeros((BLOCK,), tl.float32)
    for c0 in range(0, cols, BLOCK):
        offs = c0 + tl.arange(0, BLOCK)
        acc += tl.load(x_row + offs, mask=offs < cols, other=0.0)
    mean = tl.sum(acc, axis=0) / cols
    acc = tl.zeros((BLOCK,), tl.float32)
    for c0 in range(0, cols, BLOCK):
        offs = c0 + tl.arange(0, BLOCK)
        d = tl.where(offs < cols, tl.load(x_row + offs, mask=offs < cols, other=0.0) - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / cols + eps)
    tl.store(stats_ptr + row, mean)
    tl.store(stats_ptr + stats_stride + row, rstd)
    for c0 in range(0, cols, BLOCK):
        offs = c0 + tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(x_row + offs, mask=mask, other=0.0)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0)
        tl.store(y_ptr + row * cols + offs, (x - mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: int):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        y = x.new_empty((rows, cols))
        stats = torch.empty_strided((rows, 2), (1, rows), device=x.device, dtype=torch.float32)
        ln_fwd_kernel[(rows,)](
            x, self.ln.weight, self.ln.bias, y, stats, stats.stride(1), cols, self.ln.eps, BLOCK=256
        )
        return y
