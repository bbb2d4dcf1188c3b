# good: log-softmax over long rows in two stages: the row split into chunks, each program of a 2-D grid
# stores its chunk's (max, sum of exp) into an fp32 partials buffer, then a second kernel merges a row's
# partials into the log-sum-exp and writes x - lse; the chunk count from the shape per call
# spec: shipped:log_softmax
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def chunk_stats_kernel(x_ptr, max_ptr, sum_ptr, cols, chunks, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    offs = chunk * CHUNK + tl.arange(0, CHUNK)
    x = tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=-float("inf"))
    m = tl.max(x, axis=0)
    tl.store(max_ptr + row * chunks + chunk, m)
    tl.store(sum_ptr + row * chunks + chunk, tl.sum(tl.exp(x - m), axis=0))


@triton.jit
def merge_write_kernel(
    x_ptr, max_ptr, sum_ptr, out_ptr, cols, chunks, CHUNK: tl.constexpr, CHUNKS_P2: tl.constexpr
):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    idx = tl.arange(0, CHUNKS_P2)
    valid = idx < chunks
    m = tl.load(max_ptr + row * chunks + idx, mask=valid, other=-float("inf"))
    s = tl.load(sum_ptr + row * chunks + idx, mask=valid, other=0.0)
    row_max = tl.max(m, axis=0)
    lse = row_max + tl.log(tl.sum(s * tl.exp(m - row_max), axis=0))
    offs = chunk * CHUNK + tl.arange(0, CHUNK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=0.0)
    tl.store(out_ptr + row * cols + offs, x - lse, mask=mask)


class ModelNew(nn.Module):
    CHUNK = 1024

    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        chunks = triton.cdiv(cols, self.CHUNK)
        maxes = torch.empty((rows, chunks), device=x.device, dtype=torch.float32)
        sums = torch.empty_like(maxes)
        out = torch.empty_like(x)
        grid = (rows, chunks)
        chunk_stats_kernel[grid](x, maxes, sums, cols, chunks, CHUNK=self.CHUNK)
        merge_write_kernel[grid](
            x, maxes, sums, out, cols, chunks, CHUNK=self.CHUNK, CHUNKS_P2=triton.next_power_of_2(chunks)
        )
        return out
