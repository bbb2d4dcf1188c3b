# good: MoE router (bf16 input): the gate GEMV in fp32 of bf16-cast-to-fp32 tokens and weights, softmax
# over experts, top-k by k rounds of argmax (lowest index on ties, as topk), the kept weights renormalised
# and written as a dense row (zeros elsewhere) by the kernel; top_k a constexpr from the init inputs
# spec: shipped:moe_router
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def route(x_ptr, w_ptr, out_ptr, H, E, TOP_K: tl.constexpr, BE: tl.constexpr, BH: tl.constexpr):
    row = tl.program_id(0)
    e = tl.arange(0, BE)
    h = tl.arange(0, BH)
    x = tl.load(x_ptr + row * H + h, mask=h < H, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + e[:, None] * H + h[None, :], mask=(e[:, None] < E) & (h[None, :] < H), other=0.0).to(
        tl.float32
    )
    logits = tl.sum(w * x[None, :], axis=1)
    logits = tl.where(e < E, logits, -float("inf"))
    p = tl.exp(logits - tl.max(logits, axis=0))
    p = p / tl.sum(p, axis=0)
    remaining = p
    kept = tl.zeros((BE,), tl.float32)
    for _ in tl.static_range(TOP_K):
        best = tl.max(remaining, axis=0)
        first = tl.min(tl.where(remaining == best, e, BE), axis=0)
        kept = tl.where(e == first, p, kept)
        remaining = tl.where(e == first, -1.0, remaining)
    kept = kept / tl.sum(kept, axis=0)
    tl.store(out_ptr + row * E + e, kept.to(out_ptr.dtype.element_ty), mask=e < E)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, num_experts: int, top_k: int):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(hidden, num_experts, bias=False)

    def forward(self, x):
        x = x.contiguous()
        w = self.gate.weight.contiguous()
        n, h = x.shape
        e = w.shape[0]
        out = torch.empty((n, e), device=x.device, dtype=torch.float32)
        route[(n,)](
            x, w, out, h, e, TOP_K=self.top_k, BE=triton.next_power_of_2(e), BH=triton.next_power_of_2(h)
        )
        return out
