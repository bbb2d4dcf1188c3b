# good: the softmax cross-entropy training spec written for F.cross_entropy's defaults including
# ignore_index=-100: a row kernel writes each row's loss and lse and whether its target counts, a
# one-program kernel sums the losses and the count deterministically into the 0-d mean, and the backward
# recomputes the softmax from the saved lse, scaled by the upstream gradient read from its 0-d tensor;
# int64 targets; IGNORE a module-level constant passed to the kernels
# spec: shipped:train_softmax_ce
import torch
import torch.nn as nn
import triton
import triton.language as tl

IGNORE_INDEX = -100


@triton.jit
def ce_rows(x_ptr, t_ptr, loss_ptr, lse_ptr, valid_ptr, V, ignore, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < V
    x = tl.load(x_ptr + row * V + cols, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)
    lse = m + tl.log(tl.sum(tl.exp(x - m), axis=0))
    t = tl.load(t_ptr + row)
    keep = t != ignore
    xt = tl.sum(tl.where(cols == t, x, 0.0), axis=0)
    tl.store(lse_ptr + row, lse)
    tl.store(loss_ptr + row, tl.where(keep, lse - xt, 0.0))
    tl.store(valid_ptr + row, keep.to(tl.float32))


@triton.jit
def mean_of_valid(loss_ptr, valid_ptr, out_ptr, count_ptr, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    total = tl.zeros((BLOCK,), tl.float32)
    count = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, N, BLOCK):
        m = start + offs < N
        total += tl.load(loss_ptr + start + offs, mask=m, other=0.0)
        count += tl.load(valid_ptr + start + offs, mask=m, other=0.0)
    n = tl.sum(count, axis=0)
    tl.store(count_ptr, n)
    tl.store(out_ptr, tl.sum(total, axis=0) / n)


@triton.jit
def ce_grad(x_ptr, t_ptr, lse_ptr, count_ptr, g_ptr, dx_ptr, V, ignore, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < V
    x = tl.load(x_ptr + row * V + cols, mask=mask, other=0.0)
    t = tl.load(t_ptr + row)
    p = tl.exp(x - tl.load(lse_ptr + row))
    d = tl.where(cols == t, p - 1.0, p) * (tl.load(g_ptr) / tl.load(count_ptr))
    d = tl.where(t != ignore, d, 0.0)
    tl.store(dx_ptr + row * V + cols, d, mask=mask)


class CrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, targets):
        logits = logits.contiguous()
        n, v = logits.shape
        block = triton.next_power_of_2(v)
        losses = logits.new_empty(n)
        lse = logits.new_empty(n)
        valid = logits.new_empty(n)
        ce_rows[(n,)](logits, targets, losses, lse, valid, v, IGNORE_INDEX, BLOCK=block)
        out = logits.new_empty(())
        count = logits.new_empty(())
        mean_of_valid[(1,)](losses, valid, out, count, n, BLOCK=128)
        ctx.save_for_backward(logits, targets, lse, count)
        return out

    @staticmethod
    def backward(ctx, grad):
        logits, targets, lse, count = ctx.saved_tensors
        n, v = logits.shape
        dx = torch.empty_like(logits)
        ce_grad[(n,)](
            logits,
            targets,
            lse,
            count,
            grad.contiguous(),
            dx,
            v,
            IGNORE_INDEX,
            BLOCK=triton.next_power_of_2(v),
        )
        return dx, None


class ModelNew(nn.Module):
    def forward(self, logits, targets):
        return CrossEntropy.apply(logits, targets)
