# good: jagged mean pooling as a two-kernel pipeline behind helpers that return dicts: a one-program
# kernel turns the int64 lengths into exclusive offsets with tl.cumsum (an intermediate int64 tensor), a
# helper returns {"offsets", "lengths", "batch"}; a second kernel, one program per (sample, column block),
# averages the sample's rows in fp32 and writes zeros for an empty sample
# spec: shipped:jagged_mean
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def exclusive_offsets_kernel(len_ptr, off_ptr, batch, BLOCK: tl.constexpr):
    idx = tl.arange(0, BLOCK)
    lengths = tl.load(len_ptr + idx, mask=idx < batch, other=0).to(tl.int64)
    tl.store(off_ptr + idx, tl.cumsum(lengths, axis=0) - lengths, mask=idx < batch)


@triton.jit
def jagged_mean_kernel(v_ptr, off_ptr, len_ptr, out_ptr, dim, BLOCK_D: tl.constexpr):
    sample = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    cmask = cols < dim
    start = tl.load(off_ptr + sample)
    count = tl.load(len_ptr + sample).to(tl.int64)
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for r in tl.range(0, count):
        acc += tl.load(v_ptr + (start + r) * dim + cols, mask=cmask, other=0.0).to(tl.float32)
    mean = tl.where(count > 0, acc / tl.maximum(count, 1).to(tl.float32), 0.0)
    tl.store(out_ptr + sample * dim + cols, mean.to(out_ptr.dtype.element_ty), mask=cmask)


def jagged_layout(lengths: torch.Tensor) -> dict[str, object]:
    batch = lengths.numel()
    offsets = torch.empty(batch, dtype=torch.int64, device=lengths.device)
    exclusive_offsets_kernel[(1,)](lengths, offsets, batch, BLOCK=triton.next_power_of_2(max(batch, 1)))
    return {"offsets": offsets, "lengths": lengths, "batch": batch}


def jagged_mean(values: torch.Tensor, layout: dict[str, object]) -> torch.Tensor:
    batch = layout["batch"]
    assert isinstance(batch, int)
    dim = values.shape[1]
    out = torch.empty((batch, dim), dtype=values.dtype, device=values.device)
    block_d = min(64, triton.next_power_of_2(dim))
    jagged_mean_kernel[(batch, triton.cdiv(dim, block_d))](
        values, layout["offsets"], layout["lengths"], out, dim, BLOCK_D=block_d
    )
    return out


class ModelNew(nn.Module):
    def forward(self, values: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return jagged_mean(values.contiguous(), jagged_layout(lengths.contiguous()))
