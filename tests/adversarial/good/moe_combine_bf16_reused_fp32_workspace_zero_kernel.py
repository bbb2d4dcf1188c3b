# good: MoE combine in bf16 as a three-kernel pipeline over an fp32 accumulator the module allocates once
# per (tokens, hidden) and reuses across calls: a zeroing kernel clears it, a scatter kernel adds each
# weight-scaled expert row into its token's row with tl.atomic_add, and a cast kernel writes the bf16
# result into a fresh output
# spec: shipped:moe_combine
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def zero_kernel(buf_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(buf_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < n)


@triton.jit
def scatter_weighted_rows_kernel(src_ptr, tok_ptr, w_ptr, acc_ptr, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < hidden
    token = tl.load(tok_ptr + row).to(tl.int64)
    weight = tl.load(w_ptr + row).to(tl.float32)
    vals = tl.load(src_ptr + row * hidden + cols, mask=mask, other=0.0).to(tl.float32)
    tl.atomic_add(acc_ptr + token * hidden + cols, vals * weight, mask=mask)


@triton.jit
def cast_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask).to(dst_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_tokens: int):
        super().__init__()
        self.num_tokens = num_tokens
        self._accumulators: dict[tuple[int, int, torch.device], torch.Tensor] = {}

    def _accumulator(self, hidden: int, device: torch.device) -> torch.Tensor:
        key = (self.num_tokens, hidden, device)
        if key not in self._accumulators:
            self._accumulators[key] = torch.empty(key[:2], dtype=torch.float32, device=device)
        return self._accumulators[key]

    def forward(
        self, expert_out: torch.Tensor, token_ids: torch.Tensor, weights: torch.Tensor
    ) -> torch.Tensor:
        expert_out = expert_out.contiguous()
        hidden = expert_out.shape[1]
        acc = self._accumulator(hidden, expert_out.device)
        n = acc.numel()
        zero_kernel[(triton.cdiv(n, 256),)](acc, n, BLOCK=256)
        block = 128
        scatter_weighted_rows_kernel[(expert_out.shape[0], triton.cdiv(hidden, block))](
            expert_out, token_ids, weights, acc, hidden, BLOCK=block
        )
        out = torch.empty((self.num_tokens, hidden), dtype=expert_out.dtype, device=expert_out.device)
        cast_kernel[(triton.cdiv(n, 256),)](acc, out, n, BLOCK=256)
        return out
