# good: jagged mean: offsets by a Triton scan, the total read on the host to take the used values; the
# means written by one kernel into a buffer over-allocated to a power of two of rows, and the result
# returned as `buf[:batch].clone()` (a copy of a prefix of the kernel's output)
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


class ModelNew(nn.Module):
    def forward(self, values: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        offsets = _offsets(lengths)
        total = int(offsets[-1])
        used = values[:total]
        batch, dim = lengths.numel(), values.shape[1]
        buf = torch.empty((triton.next_power_of_2(batch), dim), dtype=values.dtype, device=values.device)
        max_len = triton.next_power_of_2(values.shape[0] + 1)
        mean_kernel[(batch, triton.cdiv(dim, 64))](used, offsets, buf, dim, MAX_LEN=max_len, BLOCK_D=64)
        return buf[:batch].clone()
