# good: per-segment sums of a jagged fp16 (total, dim) tensor given int64 offsets (the reference stacks
# slices in a Python loop): one program per segment reads its [start, end) bounds from the offsets tensor
# and walks the rows in fp32; empty segments give zeros
# spec: kb_half_jagged_sum
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def jagged_segment_sum(values_ptr, offsets_ptr, out_ptr, dim, BLOCK_D: tl.constexpr):
    seg = tl.program_id(0)
    start = tl.load(offsets_ptr + seg)
    end = tl.load(offsets_ptr + seg + 1)
    cols = tl.arange(0, BLOCK_D)
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for row in range(start, end):
        acc += tl.load(values_ptr + row * dim + cols, mask=cols < dim, other=0.0).to(tl.float32)
    tl.store(out_ptr + seg * dim + cols, acc.to(tl.float16), mask=cols < dim)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, values: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        segments = offsets.shape[0] - 1
        dim = values.shape[1]
        out = values.new_empty((segments, dim))
        jagged_segment_sum[(segments,)](
            values.contiguous(), offsets, out, dim, BLOCK_D=triton.next_power_of_2(dim)
        )
        return out
