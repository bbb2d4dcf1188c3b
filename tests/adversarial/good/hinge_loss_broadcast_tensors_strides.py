# good: the broadcast hinge loss with both operands expanded by torch.broadcast_tensors to the
# (batch, batch) product shape (views with a zero stride, no copy); the kernel reads each through its
# strides, per-row partial sums, then their mean by a second kernel
# spec: kb_hinge_loss
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def hinge_tile_kernel(p_ptr, t_ptr, part_ptr, rows, cols, sp_r, sp_c, st_r, st_c, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    acc = tl.zeros((BLOCK,), tl.float32)
    for c0 in range(0, cols, BLOCK):
        c = c0 + tl.arange(0, BLOCK)
        p = tl.load(p_ptr + r * sp_r + c * sp_c, mask=c < cols, other=0.0)
        t = tl.load(t_ptr + r * st_r + c * st_c, mask=c < cols, other=0.0)
        acc += tl.where(c < cols, tl.maximum(1.0 - p * t, 0.0), 0.0)
    tl.store(part_ptr + r, tl.sum(acc, axis=0))


@triton.jit
def mean_kernel(x_ptr, out_ptr, n, count, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.float32)
    for i0 in range(0, n, BLOCK):
        i = i0 + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + i, mask=i < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / count)


class ModelNew(nn.Module):
    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        p, t = torch.broadcast_tensors(predictions, targets)
        if p.dim() != 2:
            raise ValueError(f"expected a 2-D broadcast shape, got {tuple(p.shape)}")
        rows, cols = p.shape
        partial = torch.empty(rows, device=p.device, dtype=torch.float32)
        out = torch.empty((), device=p.device, dtype=p.dtype)
        hinge_tile_kernel[(rows,)](p, t, partial, rows, cols, *p.stride(), *t.stride(), BLOCK=64)
        mean_kernel[(1,)](partial, out, rows, rows * cols, BLOCK=64)
        return out
