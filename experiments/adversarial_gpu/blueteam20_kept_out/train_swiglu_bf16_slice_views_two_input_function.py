# good: the SwiGLU training spec split by slicing, `x[..., :h]` and
# `x[..., h:]`, two views handed to a two-input autograd.Function (one forward kernel, one backward kernel
# returning both halves' gradients); autograd's backward of the two slices is two slice_backward ops and
# an add accumulating them into dx, PyTorch compute in strict mode
# spec: shipped:train_swiglu
# strict: true
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fwd(g_ptr, u_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    g = tl.load(g_ptr + offs, mask=m, other=0.0).to(tl.float32)
    u = tl.load(u_ptr + offs, mask=m, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (g * tl.sigmoid(g) * u).to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def bwd(g_ptr, u_ptr, dy_ptr, dg_ptr, du_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    g = tl.load(g_ptr + offs, mask=m, other=0.0).to(tl.float32)
    u = tl.load(u_ptr + offs, mask=m, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=m, other=0.0).to(tl.float32)
    s = tl.sigmoid(g)
    tl.store(dg_ptr + offs, (dy * u * s * (1.0 + g * (1.0 - s))).to(dg_ptr.dtype.element_ty), mask=m)
    tl.store(du_ptr + offs, (dy * g * s).to(du_ptr.dtype.element_ty), mask=m)


class SiluMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, gate, up):
        gate, up = gate.contiguous(), up.contiguous()
        y = torch.empty_like(gate)
        fwd[(triton.cdiv(y.numel(), 256),)](gate, up, y, y.numel(), BLOCK=256)
        ctx.save_for_backward(gate, up)
        return y

    @staticmethod
    def backward(ctx, dy):
        gate, up = ctx.saved_tensors
        dg, du = torch.empty_like(gate), torch.empty_like(up)
        bwd[(triton.cdiv(gate.numel(), 256),)](gate, up, dy.contiguous(), dg, du, gate.numel(), BLOCK=256)
        return dg, du


class ModelNew(nn.Module):
    def forward(self, x):
        h = x.shape[-1] // 2
        return SiluMul.apply(x[..., :h], x[..., h:])
