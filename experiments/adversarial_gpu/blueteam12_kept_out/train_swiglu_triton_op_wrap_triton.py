# kept out (patching in every mode, static and at run time, by design; see blueteam12.md): the SwiGLU
# training spec in PyTorch's documented form for Triton kernels since 2.6:
# `torch.library.triton_op` with `torch.library.wrap_triton(kernel)[grid](...)` launches for the forward
# and the backward op, `register_autograd` tying them together (bf16 in, fp32 math, bf16 out)
# spec: shipped:train_swiglu
import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton


@triton.jit
def swiglu_fwd_kernel(x_ptr, y_ptr, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < hidden
    a = tl.load(x_ptr + row * 2 * hidden + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(x_ptr + row * 2 * hidden + hidden + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * hidden + cols, (a * tl.sigmoid(a) * b).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def swiglu_bwd_kernel(x_ptr, dy_ptr, dx_ptr, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < hidden
    a = tl.load(x_ptr + row * 2 * hidden + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(x_ptr + row * 2 * hidden + hidden + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * hidden + cols, mask=mask, other=0.0).to(tl.float32)
    s = tl.sigmoid(a)
    tl.store(dx_ptr + row * 2 * hidden + cols, (dy * b * s * (1.0 + a * (1.0 - s))).to(dx_ptr.dtype.element_ty), mask=mask)
    tl.store(dx_ptr + row * 2 * hidden + hidden + cols, (dy * a * s).to(dx_ptr.dtype.element_ty), mask=mask)


@triton_op("kernelevolve_good::swiglu_fwd", mutates_args={})
def swiglu_fwd(x: torch.Tensor) -> torch.Tensor:
    n_rows, two_h = x.shape
    y = x.new_empty((n_rows, two_h // 2))
    wrap_triton(swiglu_fwd_kernel)[(n_rows,)](x, y, two_h // 2, BLOCK=triton.next_power_of_2(two_h // 2))
    return y


@triton_op("kernelevolve_good::swiglu_bwd", mutates_args={})
def swiglu_bwd(x: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    n_rows, two_h = x.shape
    dx = torch.empty_like(x)
    wrap_triton(swiglu_bwd_kernel)[(n_rows,)](x, dy, dx, two_h // 2, BLOCK=triton.next_power_of_2(two_h // 2))
    return dx


def _setup_context(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def _backward(ctx, dy):
    (x,) = ctx.saved_tensors
    return swiglu_bwd(x, dy.contiguous())


swiglu_fwd.register_autograd(_backward, setup_context=_setup_context)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return swiglu_fwd(x.contiguous())
