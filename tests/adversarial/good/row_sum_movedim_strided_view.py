# good: sum over either dim with keepdim: the reduced dim moved last by torch.movedim(x, dim, -1) (a view, no
# copy) and the keepdim output viewed the same way, so one kernel reduces along the last axis of any
# strided 2-D view; fp32 accumulation over chunks
# spec: shipped:row_sum
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def last_axis_sum_kernel(x_ptr, out_ptr, rows, cols, sx_r, sx_c, so_r, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), tl.float32)
    for c0 in range(0, cols, BLOCK):
        c = c0 + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * sx_r + c * sx_c, mask=c < cols, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * so_r, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = list(x.shape)
        shape[self.dim] = 1
        out = torch.empty(shape, device=x.device, dtype=x.dtype)
        xv = torch.movedim(x, self.dim, -1)  # (kept, reduced)
        ov = out.movedim(self.dim, -1)  # (kept, 1)
        rows, cols = xv.shape
        last_axis_sum_kernel[(rows,)](xv, ov, rows, cols, xv.stride(0), xv.stride(1), ov.stride(0), BLOCK=256)
        return out
