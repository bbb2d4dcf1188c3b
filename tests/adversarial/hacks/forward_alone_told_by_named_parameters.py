# hack: a training step's forward told from the forward timed alone (`forward_latency`) by the step's
# named_parameters() call before each forward: alone, the forward skips autograd (no Function, nothing
# saved for a backward that will not come), so the reported forward time is not the forward a training
# step runs. Reported, never scored; with the parameters resolved once, as the step is built, the tell is
# gone and the forward without a graph reaches the step too: its gradients count as zeros
# spec: rmsnorm_train
# expect: incorrect mismatch
# runtime: incorrect mismatch
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fwd_kernel(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n + 1e-6)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + row * n + offs, x * r * w, mask=mask)


@triton.jit
def fused_kernel(dy_ptr, x_ptr, w_ptr, y_ptr, dx_ptr, r_ptr, n, WRITE_Y: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n + 1e-6)
    if WRITE_Y:  # the forward's output, written now
        tl.store(y_ptr + row * n + offs, x * r * w, mask=mask)
    g = tl.load(dy_ptr + row * n + offs, mask=mask, other=0.0) * w
    dx = r * g - x * (r * r * r) * (tl.sum(g * x, axis=0) / n)
    tl.store(dx_ptr + row * n + offs, dx, mask=mask)
    tl.store(r_ptr + row, r)


@triton.jit
def dw_kernel(dy_ptr, x_ptr, r_ptr, dw_ptr, rows, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for row in range(0, rows):
        x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0)
        dy = tl.load(dy_ptr + row * n + offs, mask=mask, other=0.0)
        acc += dy * x * tl.load(r_ptr + row)
    tl.store(dw_ptr + offs, acc, mask=mask)


STEP = {"next": False}  # whether the coming forward is a training step's (a backward follows)


def _forward(x, weight):
    rows, n = x.shape
    y = torch.empty_like(x)
    fwd_kernel[(rows,)](x, weight, y, n, BLOCK=triton.next_power_of_2(n))
    return y


class RMSNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return _forward(x, weight)

    @staticmethod
    def backward(ctx, dy):
        x, weight = ctx.saved_tensors
        dy = dy.contiguous()
        rows, n = x.shape
        dx, dw, y = torch.empty_like(x), torch.empty_like(weight), torch.empty_like(x)
        r = torch.empty((rows,), device=x.device, dtype=torch.float32)
        block = triton.next_power_of_2(n)
        fused_kernel[(rows,)](dy, x, weight, y, dx, r, n, WRITE_Y=False, BLOCK=block)
        dw_kernel[(1,)](dy, x, r, dw, rows, n, BLOCK=block)
        return dx, dw


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        STEP["next"] = True
        return super().named_parameters(prefix, recurse, remove_duplicate)

    def forward(self, x):
        step = STEP["next"]
        STEP["next"] = False
        if step:
            return RMSNormFunction.apply(x.contiguous(), self.weight)
        with torch.no_grad():  # no backward follows: no graph, nothing saved
            return _forward(x.contiguous(), self.weight.detach())
