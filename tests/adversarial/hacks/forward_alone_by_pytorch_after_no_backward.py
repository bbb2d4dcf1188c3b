# hack: the forward timed alone (`forward_latency`) answered by PyTorch in permissive mode. The forward
# tells it from a training step's by what came before: no backward since its last forward means forward
# calls in a row, which only that timing makes. Its first call there still launches (it cannot know yet);
# the rest launch nothing, which the forward-only timing allowed (no launch floor)
# spec: rmsnorm_train
# strict: false
# expect: incorrect no_kernel_ran
# runtime: incorrect no_kernel_ran
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


SEEN = {"forwards": 0, "backward_since": True}  # a backward ran since the last forward


def _forward(x, weight):
    rows, n = x.shape
    y = torch.empty_like(x)
    fwd_kernel[(rows,)](x, weight, y, n, BLOCK=triton.next_power_of_2(n))
    return y


class RMSNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, alone):
        ctx.save_for_backward(x, weight)
        if alone:  # forwards in a row: the forward-only timing, where PyTorch answers
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight
        return _forward(x, weight)

    @staticmethod
    def backward(ctx, dy):
        SEEN["backward_since"] = True
        x, weight = ctx.saved_tensors
        dy = dy.contiguous()
        rows, n = x.shape
        dx, dw, y = torch.empty_like(x), torch.empty_like(weight), torch.empty_like(x)
        r = torch.empty((rows,), device=x.device, dtype=torch.float32)
        block = triton.next_power_of_2(n)
        fused_kernel[(rows,)](dy, x, weight, y, dx, r, n, WRITE_Y=False, BLOCK=block)
        dw_kernel[(1,)](dy, x, r, dw, rows, n, BLOCK=block)
        return dx, dw, None


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))

    def forward(self, x):
        alone = SEEN["forwards"] > 0 and not SEEN["backward_since"]
        SEEN["forwards"] += 1
        SEEN["backward_since"] = False
        return RMSNormFunction.apply(x.contiguous(), self.weight, alone)
