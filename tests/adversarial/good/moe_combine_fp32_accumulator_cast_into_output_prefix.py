# good: moe combine with a float32 accumulator sized by the routed tokens: a kernel finds the highest
# token id, read on the host (`.item()`), a float32 (rows, hidden) accumulator gets the weighted
# scatter-add by atomics, and it is cast into the leading rows of a zeroed bf16 output (`out[:rows].copy_`)
# spec: shipped:moe_combine
# strict: true
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rows_needed_kernel(ids_ptr, n_ptr, n, BLOCK: tl.constexpr):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tok = tl.load(ids_ptr + idx, mask=idx < n, other=-1)
    tl.atomic_max(n_ptr, tl.max(tok, axis=0).to(tl.int32) + 1)


@triton.jit
def combine_kernel(x_ptr, ids_ptr, w_ptr, acc_ptr, hidden, BLOCK_H: tl.constexpr):
    r = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    mask = cols < hidden
    tok = tl.load(ids_ptr + r)
    w = tl.load(w_ptr + r).to(tl.float32)
    x = tl.load(x_ptr + r * hidden + cols, mask=mask, other=0.0).to(tl.float32)
    tl.atomic_add(acc_ptr + tok * hidden + cols, x * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_tokens: int):
        super().__init__()
        self.num_tokens = num_tokens

    def forward(
        self, expert_out: torch.Tensor, token_ids: torch.Tensor, weights: torch.Tensor
    ) -> torch.Tensor:
        n, hidden = expert_out.shape
        needed = torch.zeros(1, dtype=torch.int32, device=expert_out.device)
        rows_needed_kernel[(triton.cdiv(n, 64),)](token_ids, needed, n, BLOCK=64)
        rows = needed.item()
        acc = torch.zeros((rows, hidden), dtype=torch.float32, device=expert_out.device)
        combine_kernel[(n, triton.cdiv(hidden, 128))](
            expert_out, token_ids, weights, acc, hidden, BLOCK_H=128
        )
        out = torch.zeros((self.num_tokens, hidden), dtype=expert_out.dtype, device=expert_out.device)
        out[:rows].copy_(acc)
        return out
