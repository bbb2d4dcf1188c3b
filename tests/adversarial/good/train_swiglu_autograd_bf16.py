# good: the SwiGLU training spec in bf16: an autograd.Function whose forward and backward are Triton
# kernels; forward saves only its input, backward recomputes sigmoid in fp32 and writes the gate and up
# halves of the input's gradient into one buffer, rounding where PyTorch's bf16 autograd rounds
# spec: shipped:train_swiglu
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def swiglu_fwd(x_ptr, y_ptr, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < hidden
    g = tl.load(x_ptr + row * 2 * hidden + cols, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(x_ptr + row * 2 * hidden + hidden + cols, mask=mask, other=0.0).to(tl.float32)
    silu = (g * tl.sigmoid(g)).to(tl.bfloat16).to(tl.float32)
    tl.store(y_ptr + row * hidden + cols, (silu * u).to(tl.bfloat16), mask=mask)


@triton.jit
def swiglu_bwd(dy_ptr, x_ptr, dx_ptr, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < hidden
    g = tl.load(x_ptr + row * 2 * hidden + cols, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(x_ptr + row * 2 * hidden + hidden + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * hidden + cols, mask=mask, other=0.0).to(tl.float32)
    sig = tl.sigmoid(g)
    silu = (g * sig).to(tl.bfloat16).to(tl.float32)
    dsilu = (dy * u).to(tl.bfloat16).to(tl.float32)
    dg = dsilu * sig * (1.0 + g * (1.0 - sig))
    tl.store(dx_ptr + row * 2 * hidden + cols, dg.to(tl.bfloat16), mask=mask)
    tl.store(dx_ptr + row * 2 * hidden + hidden + cols, (dy * silu).to(tl.bfloat16), mask=mask)


class _SwiGLU(torch.autograd.Function):
    BLOCK = 64

    @staticmethod
    def forward(ctx, x):
        x = x.contiguous()
        rows = x.numel() // x.shape[-1]
        hidden = x.shape[-1] // 2
        y = torch.empty((*x.shape[:-1], hidden), dtype=x.dtype, device=x.device)
        swiglu_fwd[(rows, triton.cdiv(hidden, _SwiGLU.BLOCK))](x, y, hidden, BLOCK=_SwiGLU.BLOCK)
        ctx.save_for_backward(x)
        return y

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        rows = x.numel() // x.shape[-1]
        hidden = x.shape[-1] // 2
        dx = torch.empty_like(x)
        swiglu_bwd[(rows, triton.cdiv(hidden, _SwiGLU.BLOCK))](
            dy.contiguous(), x, dx, hidden, BLOCK=_SwiGLU.BLOCK
        )
        return dx


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _SwiGLU.apply(x)
