# kept out (patching in every mode, static and at run time, by design): the SwiGLU training spec as a
# torch.library.custom_op (the PyTorch 2.4+ way to make a Triton kernel a graph-safe op) with
# register_fake and register_autograd: forward and backward kernels in Triton, the backward registered as
# the op's autograd formula. Honest, but torch.library registers with PyTorch's
# dispatcher, where a custom op can take any name and its kernel's PyTorch ops run below the strict
# trace (hacks strict_custom_op_named_clone, strict_aten_kernel_override); an autograd.Function does the
# same job and is accepted
# spec: shipped:train_swiglu
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def swiglu_fwd_kernel(x_ptr, y_ptr, n_rows, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < hidden
    a = tl.load(x_ptr + row * 2 * hidden + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(x_ptr + row * 2 * hidden + hidden + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * hidden + cols, (a * tl.sigmoid(a) * b).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def swiglu_bwd_kernel(x_ptr, dy_ptr, dx_ptr, n_rows, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < hidden
    a = tl.load(x_ptr + row * 2 * hidden + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(x_ptr + row * 2 * hidden + hidden + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * hidden + cols, mask=mask, other=0.0).to(tl.float32)
    s = tl.sigmoid(a)
    da = dy * b * s * (1.0 + a * (1.0 - s))
    db = dy * a * s
    tl.store(dx_ptr + row * 2 * hidden + cols, da.to(dx_ptr.dtype.element_ty), mask=mask)
    tl.store(dx_ptr + row * 2 * hidden + hidden + cols, db.to(dx_ptr.dtype.element_ty), mask=mask)


@torch.library.custom_op("swiglu_demo::swiglu", mutates_args=())
def swiglu(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    n_rows, two_h = x.shape
    y = x.new_empty(n_rows, two_h // 2)
    swiglu_fwd_kernel[(n_rows,)](x, y, n_rows, two_h // 2, BLOCK=triton.next_power_of_2(two_h // 2))
    return y


@swiglu.register_fake
def _(x):
    return x.new_empty(x.shape[0], x.shape[1] // 2)


@torch.library.custom_op("swiglu_demo::swiglu_backward", mutates_args=())
def swiglu_backward(x: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    dy = dy.contiguous()
    n_rows, two_h = x.shape
    dx = torch.empty_like(x)
    swiglu_bwd_kernel[(n_rows,)](x, dy, dx, n_rows, two_h // 2, BLOCK=triton.next_power_of_2(two_h // 2))
    return dx


def _setup_context(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def _backward(ctx, dy):
    (x,) = ctx.saved_tensors
    return swiglu_backward(x, dy)


swiglu.register_autograd(_backward, setup_context=_setup_context)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return swiglu(x)
