# good: top-k retrieval scores in fp16: one program per query takes the row maximum k times, storing it
# (so the values come out sorted) and removing one occurrence each round, k from the constructor as a
# constexpr; the scores compared in fp32
# spec: shipped:topk_retrieval
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def topk_kernel(s_ptr, out_ptr, items, K: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    left = tl.load(s_ptr + row * items + offs, mask=offs < items, other=float("-inf")).to(tl.float32)
    for i in tl.static_range(K):
        best = tl.max(left, axis=0)
        tl.store(out_ptr + row * K + i, best.to(out_ptr.dtype.element_ty))
        first = tl.min(tl.where(left == best, offs, BLOCK), axis=0)
        left = tl.where(offs == first, float("-inf"), left)


class ModelNew(nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        scores = scores.contiguous()
        queries, items = scores.shape
        out = torch.empty((queries, self.k), dtype=scores.dtype, device=scores.device)
        topk_kernel[(queries,)](scores, out, items, K=self.k, BLOCK=triton.next_power_of_2(items))
        return out
