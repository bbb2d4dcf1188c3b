# good: jagged mean pooling from per-sample lengths (int64): each program sums the lengths before it to
# find its start (no host-side cumsum), then averages its rows; empty samples give zeros
# spec: shipped:jagged_mean
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def jagged_mean_kernel(v_ptr, len_ptr, out_ptr, batch, dim, BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr):
    b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    cmask = cols < dim
    start = tl.zeros((), dtype=tl.int64)
    for chunk in range(0, batch, BLOCK_B):
        j = chunk + tl.arange(0, BLOCK_B)
        start += tl.sum(tl.load(len_ptr + j, mask=(j < b), other=0), axis=0)
    n = tl.load(len_ptr + b)
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for r in range(start, start + n):
        acc += tl.load(v_ptr + r * dim + cols, mask=cmask, other=0.0)
    mean = tl.where(n > 0, acc / tl.maximum(n, 1).to(tl.float32), 0.0)
    tl.store(out_ptr + b * dim + cols, mean, mask=cmask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, values: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        values = values.contiguous()
        batch = lengths.numel()
        dim = values.shape[1]
        out = torch.empty((batch, dim), dtype=values.dtype, device=values.device)
        grid = (batch, triton.cdiv(dim, 64))
        jagged_mean_kernel[grid](values, lengths, out, batch, dim, BLOCK_B=64, BLOCK_D=64)
        return out
