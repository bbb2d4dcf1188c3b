# good: KernelBench level-1 cross entropy: fp32 logits and int64 class targets; one program per row
# computes the log-sum-exp and gathers the target's logit, a second kernel takes the mean into a 0-d output
# spec: kb_cross_entropy
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ce_row_kernel(x_ptr, tgt_ptr, loss_ptr, classes, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < classes
    x = tl.load(x_ptr + row * classes + offs, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)
    lse = m + tl.log(tl.sum(tl.exp(x - m), axis=0))
    target = tl.load(tgt_ptr + row)
    picked = tl.sum(tl.where(offs == target, x, 0.0), axis=0)
    tl.store(loss_ptr + row, lse - picked)


@triton.jit
def mean_kernel(loss_ptr, out_ptr, rows, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    losses = tl.load(loss_ptr + offs, mask=offs < rows, other=0.0)
    tl.store(out_ptr, tl.sum(losses, axis=0) / rows)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        x = predictions.contiguous()
        rows, classes = x.shape
        losses = torch.empty(rows, device=x.device, dtype=torch.float32)
        ce_row_kernel[(rows,)](
            x, targets.contiguous(), losses, classes, BLOCK=triton.next_power_of_2(classes)
        )
        out = torch.empty((), device=x.device, dtype=x.dtype)
        mean_kernel[(1,)](losses, out, rows, BLOCK=triton.next_power_of_2(rows))
        return out
