# good: MoE combine in bf16 through small helpers that write into an `out=` tensor the caller allocates:
# a weighted scatter of expert rows into a torch.zeros fp32 accumulator with tl.atomic_add (one program per
# expert row), then a cast kernel into a freshly allocated bf16 result returned by the second helper
# spec: shipped:moe_combine
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scatter_weighted_kernel(e_ptr, ids_ptr, w_ptr, acc_ptr, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    token = tl.load(ids_ptr + row)
    w = tl.load(w_ptr + row).to(tl.float32)
    for c0 in range(0, hidden, BLOCK):
        c = c0 + tl.arange(0, BLOCK)
        mask = c < hidden
        v = tl.load(e_ptr + row * hidden + c, mask=mask, other=0.0).to(tl.float32)
        tl.atomic_add(acc_ptr + token * hidden + c, v * w, mask=mask)


@triton.jit
def cast_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(src_ptr + offs, mask=mask, other=0.0)
    tl.store(dst_ptr + offs, v.to(dst_ptr.dtype.element_ty), mask=mask)


def scatter_weighted(
    expert_out: torch.Tensor, token_ids: torch.Tensor, weights: torch.Tensor, *, out: torch.Tensor
) -> torch.Tensor:
    rows, hidden = expert_out.shape
    scatter_weighted_kernel[(rows,)](expert_out, token_ids, weights, out, hidden, BLOCK=128)
    return out


def cast_into(src: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
    n = src.numel()
    cast_kernel[(triton.cdiv(n, 256),)](src, out, n, BLOCK=256)
    return out


class ModelNew(nn.Module):
    def __init__(self, num_tokens: int):
        super().__init__()
        self.num_tokens = num_tokens

    def forward(
        self, expert_out: torch.Tensor, token_ids: torch.Tensor, weights: torch.Tensor
    ) -> torch.Tensor:
        expert_out = expert_out.contiguous()
        hidden = expert_out.shape[1]
        acc = torch.zeros((self.num_tokens, hidden), device=expert_out.device, dtype=torch.float32)
        scatter_weighted(expert_out, token_ids.contiguous(), weights.contiguous(), out=acc)
        result = torch.empty((self.num_tokens, hidden), device=expert_out.device, dtype=expert_out.dtype)
        return cast_into(acc, out=result)
