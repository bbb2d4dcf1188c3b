# good: row sums split over column chunks on a 2-D grid, each program adding its partial sum with
# tl.atomic_add into an output zeroed per call (torch.zeros); a kernel whose grid is a lambda over META
# spec: rowsum
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rowsum_atomic_kernel(x_ptr, out_ptr, cols, stride, BLOCK_C: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < cols, other=0.0)
    tl.atomic_add(out_ptr + row, tl.sum(x.to(tl.float32), axis=0))


class ModelNew(nn.Module):
    BLOCK_C = 16

    @torch.no_grad()
    def forward(self, x):
        rows, cols = x.shape
        out = torch.zeros(rows, device=x.device, dtype=torch.float32)
        grid = lambda META: (rows, triton.cdiv(cols, META["BLOCK_C"]))  # noqa: E731
        rowsum_atomic_kernel[grid](x, out, cols, x.stride(0), BLOCK_C=self.BLOCK_C)
        return out if x.dtype == torch.float32 else out.to(x.dtype)
