# good: row sums in two kernels, partial sums of column chunks into a scratch buffer kept per shape on
# the module (a fresh allocation, rewritten every call), then a second kernel adding the partials; the
# launches go through a staticmethod that returns (partials, chunks)
# spec: rowsum
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def partial_sums(x_ptr, part_ptr, stride, cols, chunks, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    offs = chunk * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < cols, other=0.0)
    tl.store(part_ptr + row * chunks + chunk, tl.sum(x, axis=0))


@triton.jit
def add_partials(part_ptr, out_ptr, chunks, CHUNKS: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, CHUNKS)
    parts = tl.load(part_ptr + row * chunks + offs, mask=offs < chunks, other=0.0)
    tl.store(out_ptr + row, tl.sum(parts, axis=0))


class ModelNew(nn.Module):
    BLOCK = 16

    def __init__(self):
        super().__init__()
        self.scratch = {}

    @staticmethod
    def _partials(x, scratch, block):
        rows, cols = x.shape
        chunks = triton.cdiv(cols, block)
        if (rows, chunks) not in scratch:
            scratch[(rows, chunks)] = torch.empty(rows, chunks, device=x.device, dtype=torch.float32)
        part = scratch[(rows, chunks)]
        partial_sums[(rows, chunks)](x, part, x.stride(0), cols, chunks, BLOCK=block)
        return part, chunks

    def forward(self, x):
        x = x.contiguous()
        part, chunks = self._partials(x, self.scratch, self.BLOCK)
        out = x.new_empty(x.shape[0])
        add_partials[(x.shape[0],)](part, out, chunks, CHUNKS=triton.next_power_of_2(chunks))
        return out
