# good: jagged mean with one launch per sample: offsets by a Triton scan, read on the host by
# `tolist()`, each sample's rows passed as a view `values[start:end]` (`.contiguous()`, no copy) to a
# kernel writing that sample's output row
# spec: shipped:jagged_mean
# strict: true
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def offsets_kernel(len_ptr, off_ptr, n, BLOCK: tl.constexpr):
    idx = tl.arange(0, BLOCK)
    lens = tl.load(len_ptr + idx, mask=idx < n, other=0)
    incl = tl.cumsum(lens, 0)
    tl.store(off_ptr + idx + 1, incl, mask=idx < n)
    tl.store(off_ptr + idx, incl - incl, mask=idx == 0)


@triton.jit
def mean_kernel(v_ptr, off_ptr, out_ptr, dim, MAX_LEN: tl.constexpr, BLOCK_D: tl.constexpr):
    b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    start = tl.load(off_ptr + b)
    length = tl.load(off_ptr + b + 1) - start
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for i in range(0, MAX_LEN):
        acc += tl.load(v_ptr + (start + i) * dim + cols, mask=(cols < dim) & (i < length), other=0.0)
    mean = acc / tl.maximum(length, 1).to(tl.float32)
    tl.store(out_ptr + b * dim + cols, mean, mask=cols < dim)


def _offsets(lengths: torch.Tensor) -> torch.Tensor:
    n = lengths.numel()
    offsets = torch.empty(n + 1, dtype=torch.int64, device=lengths.device)
    offsets_kernel[(1,)](lengths, offsets, n, BLOCK=triton.next_power_of_2(n + 1))
    return offsets


@triton.jit
def one_sample_mean_kernel(v_ptr, out_ptr, length, dim, BLOCK_D: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_D + tl.arange(0, BLOCK_D)
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for i in range(0, length):
        acc += tl.load(v_ptr + i * dim + cols, mask=cols < dim, other=0.0)
    tl.store(out_ptr + cols, acc / tl.maximum(length, 1).to(tl.float32), mask=cols < dim)


class ModelNew(nn.Module):
    def forward(self, values: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        bounds = _offsets(lengths).tolist()
        dim = values.shape[1]
        out = torch.empty((lengths.numel(), dim), dtype=values.dtype, device=values.device)
        for b, (start, end) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
            rows = values[start:end].contiguous()
            one_sample_mean_kernel[(triton.cdiv(dim, 64),)](rows, out[b], rows.shape[0], dim, BLOCK_D=64)
        return out
