# good: mean cross entropy over bf16 logits with int64 targets: one program per token computes an online
# log-sum-exp over vocabulary blocks (a loop to a runtime bound), reads its target's logit and adds
# loss / tokens into a zeroed fp32 scalar with tl.atomic_add; the 0-d result cast to the logits' dtype
# by a second tiny kernel
# spec: shipped:cross_entropy
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ce_kernel(logits_ptr, target_ptr, acc_ptr, vocab, stride, inv_tokens, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = logits_ptr + row * stride
    m = float("-inf")
    s = 0.0
    for start in range(0, vocab, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(base + offs, mask=offs < vocab, other=float("-inf")).to(tl.float32)
        new_m = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - new_m) + tl.sum(tl.exp(x - new_m), axis=0)
        m = new_m
    target = tl.load(target_ptr + row)
    picked = tl.load(base + target).to(tl.float32)
    tl.atomic_add(acc_ptr, (m + tl.log(s) - picked) * inv_tokens)


@triton.jit
def cast_kernel(src_ptr, dst_ptr):
    tl.store(dst_ptr, tl.load(src_ptr).to(dst_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        tokens, vocab = logits.shape
        acc = torch.zeros((), dtype=torch.float32, device=logits.device)
        ce_kernel[(tokens,)](logits, targets, acc, vocab, logits.stride(0), 1.0 / tokens, BLOCK=256)
        out = torch.empty((), dtype=logits.dtype, device=logits.device)
        cast_kernel[(1,)](acc, out)
        return out
