# good: top-k scores of each row with tl.topk: the whole row loaded as one power-of-two block (padding at
# -inf), the top k rounded up to a power of two taken in descending order, and the first k of them stored
# spec: shipped:topk_retrieval
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_topk_kernel(scores_ptr, out_ptr, n_items, stride_row, k, BLOCK: tl.constexpr, K_P2: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    vals = tl.load(scores_ptr + row * stride_row + offs, mask=offs < n_items, other=float("-inf"))
    best = tl.topk(vals, K_P2, dim=0)  # descending
    kept = tl.arange(0, K_P2)
    tl.store(out_ptr + row * k + kept, best, mask=kept < k)


class ModelNew(nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        if scores.stride(-1) != 1:
            scores = scores.contiguous()
        rows, items = scores.shape
        if self.k > items:
            raise ValueError(f"k={self.k} is larger than the {items} items of a row")
        out = torch.empty((rows, self.k), device=scores.device, dtype=scores.dtype)
        row_topk_kernel[(rows,)](
            scores, out, items, scores.stride(0), self.k,
            BLOCK=triton.next_power_of_2(items), K_P2=triton.next_power_of_2(self.k),
        )  # fmt: skip
        return out
