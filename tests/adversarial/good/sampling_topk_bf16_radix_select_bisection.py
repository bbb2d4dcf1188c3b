# good: top-k sampling probabilities from bf16 logits by radix select: each logit's fp32 bits mapped to an
# order-preserving int32 key (negative floats' magnitude bits flipped, -0.0 folded into +0.0 first), a
# 32-step bisection on the key finds the exact k-th largest (the largest key with at least k keys at or
# above it), keys below it masked to -inf, a temperature-scaled fp32 softmax written as the output
# spec: shipped:sampling_topk
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def topk_softmax_kernel(logits_ptr, out_ptr, vocab, k, inv_temp, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < vocab
    x = tl.load(logits_ptr + row * vocab + cols, mask=mask, other=float("-inf")).to(tl.float32) + 0.0
    bits = x.to(tl.int32, bitcast=True)
    key = tl.where(bits < 0, bits ^ 0x7FFFFFFF, bits).to(tl.int64)
    lo = tl.full((), -2147483648, dtype=tl.int64)
    hi = tl.full((), 2147483647, dtype=tl.int64)
    for _ in range(32):
        mid = lo + (hi - lo + 1) // 2
        above = tl.sum(tl.where(mask & (key >= mid), 1, 0), axis=0)
        take = above >= k
        lo = tl.where(take, mid, lo)
        hi = tl.where(take, hi, mid - 1)
    kept = mask & (key >= lo)
    z = tl.where(kept, x * inv_temp, float("-inf"))
    e = tl.exp(z - tl.max(z, axis=0))
    tl.store(out_ptr + row * vocab + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, k: int, temperature: float = 0.7):
        super().__init__()
        self.k = k
        self.temperature = temperature

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        logits = logits.contiguous()
        rows, vocab = logits.shape
        out = torch.empty((rows, vocab), dtype=torch.float32, device=logits.device)
        topk_softmax_kernel[(rows,)](
            logits, out, vocab, self.k, 1.0 / self.temperature, BLOCK=triton.next_power_of_2(vocab)
        )
        return out
