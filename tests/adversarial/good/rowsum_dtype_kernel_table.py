# good: row sums with a kernel table keyed by dtype (an fp32 kernel and one that accumulates half types in
# fp32), a static_range unrolled loop over column tiles, a grid from a helper returning (grid, block), and
# a generator expression over the shape for the element count
# spec: rowsum
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rowsum_f32(x_ptr, out_ptr, stride, cols, BLOCK: tl.constexpr, TILES: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for t in tl.static_range(TILES):
        offs = t * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + offs, mask=offs < cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def rowsum_half(x_ptr, out_ptr, stride, cols, BLOCK: tl.constexpr, TILES: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for t in tl.static_range(TILES):
        offs = t * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + offs, mask=offs < cols, other=0.0).to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty))


KERNELS = {torch.float32: rowsum_f32, torch.float16: rowsum_half, torch.bfloat16: rowsum_half}


def plan(rows, cols, block=16):
    return (rows,), block, triton.cdiv(cols, block)


class ModelNew(nn.Module):
    def forward(self, x):
        rows, cols = x.shape
        count = 1
        for size in (s for s in x.shape):
            count *= size
        out = torch.empty(rows, device=x.device, dtype=x.dtype)
        if count == 0:
            return out.zero_()
        grid, block, tiles = plan(rows, cols)
        kernel = KERNELS.get(x.dtype, rowsum_f32)
        kernel[grid](x, out, x.stride(0), cols, BLOCK=block, TILES=tiles)
        return out
