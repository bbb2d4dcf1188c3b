# good: jagged mean whose kernel loads without row masks: after the total is read on the host, the used
# values are copied into a zeroed buffer padded by one block of rows (`padded[:total].copy_(...)`), and a
# kernel pools each sample's run from it (offsets by a Triton scan)
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
def mean_unmasked_rows_kernel(v_ptr, off_ptr, out_ptr, dim, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr):
    b = tl.program_id(0)
    cols = tl.arange(0, BLOCK_D)
    start = tl.load(off_ptr + b)
    length = tl.load(off_ptr + b + 1) - start
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for i in range(0, length, BLOCK_L):
        rows = start + i + tl.arange(0, BLOCK_L)
        keep = (i + tl.arange(0, BLOCK_L)) < length
        block = tl.load(v_ptr + rows[:, None] * dim + cols[None, :], mask=(cols < dim)[None, :], other=0.0)
        acc += tl.sum(tl.where(keep[:, None], block, 0.0), axis=0)
    tl.store(out_ptr + b * dim + cols, acc / tl.maximum(length, 1).to(tl.float32), mask=cols < dim)


class ModelNew(nn.Module):
    BLOCK_L = 8

    def forward(self, values: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        offsets = _offsets(lengths)
        total = int(offsets[-1])
        batch, dim = lengths.numel(), values.shape[1]
        padded = torch.zeros((values.shape[0] + self.BLOCK_L, dim), dtype=values.dtype, device=values.device)
        padded[:total].copy_(values[:total])
        out = torch.empty((batch, dim), dtype=values.dtype, device=values.device)
        mean_unmasked_rows_kernel[(batch,)](
            padded, offsets, out, dim, BLOCK_L=self.BLOCK_L, BLOCK_D=triton.next_power_of_2(dim)
        )
        return out
