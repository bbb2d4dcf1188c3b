# good: top-k sampling probabilities from bf16 logits: the k-th largest found by k rounds of taking the
# row maximum and removing one occurrence of it (ties counted as torch.topk counts them), the rest masked
# to -inf, a temperature-scaled fp32 softmax written as the float32 output
# spec: shipped:sampling_topk
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def topk_softmax_kernel(x_ptr, out_ptr, vocab, inv_temp, K: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < vocab
    x = tl.load(x_ptr + row * vocab + offs, mask=mask, other=float("-inf")).to(tl.float32)
    left = x
    kth = float("inf")
    for _ in tl.static_range(K):
        kth = tl.max(left, axis=0)
        first = tl.min(tl.where(left == kth, offs, BLOCK), axis=0)
        left = tl.where(offs == first, float("-inf"), left)
    kept = tl.where(x >= kth, x * inv_temp, float("-inf"))
    e = tl.exp(kept - tl.max(kept, axis=0))
    tl.store(out_ptr + row * vocab + offs, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, k: int, temperature: float = 0.7):
        super().__init__()
        self.k = k
        self.temperature = temperature

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        logits = logits.contiguous()
        batch, vocab = logits.shape
        out = torch.empty((batch, vocab), dtype=torch.float32, device=logits.device)
        topk_softmax_kernel[(batch,)](
            logits, out, vocab, 1.0 / self.temperature, K=self.k, BLOCK=triton.next_power_of_2(vocab)
        )
        return out
