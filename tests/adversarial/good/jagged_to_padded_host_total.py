# good: jagged to padded dense with int64 offsets: the host reads the total row count once
# (`int(offsets[-1])`, as jagged code sizes buffers) to guard an empty batch, then a 3-D grid of (sample,
# position block, column block) copies each valid row and writes zeros past the sample's length.
# Permissive: strict mode counts a comparison on a host copy of tensor data as host work
# (`host_compute`), however small: the guard decides on the data on the host
# spec: shipped:jagged_to_padded_dense
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def to_padded_kernel(v_ptr, off_ptr, out_ptr, max_len, dim, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr):
    b = tl.program_id(0)
    pos = tl.program_id(1) * BLOCK_L + tl.arange(0, BLOCK_L)
    cols = tl.program_id(2) * BLOCK_D + tl.arange(0, BLOCK_D)
    start = tl.load(off_ptr + b)
    length = tl.load(off_ptr + b + 1) - start
    valid = (pos < length)[:, None] & (cols < dim)[None, :]
    vals = tl.load(v_ptr + (start + pos)[:, None] * dim + cols[None, :], mask=valid, other=0.0)
    inside = (pos < max_len)[:, None] & (cols < dim)[None, :]
    tl.store(out_ptr + (b * max_len + pos)[:, None] * dim + cols[None, :], vals, mask=inside)


class ModelNew(nn.Module):
    def __init__(self, max_len: int):
        super().__init__()
        self.max_len = max_len

    def forward(self, values: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        batch = offsets.numel() - 1
        dim = values.shape[1]
        out = torch.empty((batch, self.max_len, dim), dtype=values.dtype, device=values.device)
        if int(offsets[-1]) == 0:
            return out.zero_()
        grid = (batch, triton.cdiv(self.max_len, 16), triton.cdiv(dim, 64))
        to_padded_kernel[grid](values.contiguous(), offsets, out, self.max_len, dim, BLOCK_L=16, BLOCK_D=64)
        return out
