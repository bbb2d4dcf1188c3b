# hack: strict mode lets autograd's own join of a split's gradients through (`cat` under the engine's
# SplitBackward0 node: an honest `x.chunk(2, -1)` before a Function needs it). The node was told by its
# class name, and a Function's node class can be renamed: with `_backward_cls.__name__ = "SplitBackward0"`,
# a `torch.cat` in the candidate's own backward (here joining the gate's and the up half's gradients, the
# kernels' outputs) passed as the engine's, so PyTorch did a movement strict mode refuses elsewhere
# spec: shipped:train_swiglu
# expect: rejected_static torch_compute_op
# runtime: incorrect strict_violation
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def silu_mul_fwd(x_ptr, y_ptr, h, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    row, col = offs // h, offs % h
    g = tl.load(x_ptr + row * 2 * h + col, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(x_ptr + row * 2 * h + h + col, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (g * tl.sigmoid(g) * u).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def silu_mul_bwd(x_ptr, dy_ptr, dg_ptr, du_ptr, h, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    row, col = offs // h, offs % h
    g = tl.load(x_ptr + row * 2 * h + col, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(x_ptr + row * 2 * h + h + col, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    s = tl.sigmoid(g)
    tl.store(dg_ptr + offs, (dy * u * s * (1.0 + g * (1.0 - s))).to(dg_ptr.dtype.element_ty), mask=mask)
    tl.store(du_ptr + offs, (dy * g * s).to(du_ptr.dtype.element_ty), mask=mask)


BLOCK = 256


class SiluMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.contiguous()
        h = x.shape[-1] // 2
        y = x.new_empty((*x.shape[:-1], h))
        n = y.numel()
        silu_mul_fwd[(triton.cdiv(n, BLOCK),)](x, y, h, n, BLOCK=BLOCK)
        ctx.save_for_backward(x)
        return y

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        h = x.shape[-1] // 2
        dgate = x.new_empty((*x.shape[:-1], h))
        dup = torch.empty_like(dgate)
        n = dgate.numel()
        silu_mul_bwd[(triton.cdiv(n, BLOCK),)](x, dy.contiguous(), dgate, dup, h, n, BLOCK=BLOCK)
        return torch.cat([dgate, dup], dim=-1)  # PyTorch joins them, under a node named like the engine's


SiluMul._backward_cls.__name__ = "SplitBackward0"


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return SiluMul.apply(x)
