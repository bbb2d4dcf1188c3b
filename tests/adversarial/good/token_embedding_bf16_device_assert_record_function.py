# good: token embedding lookup in bf16 with a tl.device_assert on the token id's range (active in
# debug builds, free otherwise), tl.static_assert on the block, the row offset widened to int64, and
# the launch inside torch.profiler.record_function so a profile shows it by name
# spec: shipped:token_embedding
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def embed_kernel(tok_ptr, w_ptr, out_ptr, vocab, hidden, BLOCK_H: tl.constexpr):
    tl.static_assert(BLOCK_H % 16 == 0, "BLOCK_H must be a multiple of 16")
    t = tl.program_id(0)
    h = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    tok = tl.load(tok_ptr + t)
    tl.device_assert((tok >= 0) & (tok < vocab), "token id out of range")
    row = tl.load(w_ptr + tok.to(tl.int64) * hidden + h, mask=h < hidden, other=0.0)
    tl.store(out_ptr + t.to(tl.int64) * hidden + h, row, mask=h < hidden)


class ModelNew(nn.Module):
    def __init__(self, vocab_size: int, hidden: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        weight = self.embed.weight.contiguous()
        vocab, hidden = weight.shape
        flat = tokens.reshape(-1).contiguous()
        out = torch.empty((flat.numel(), hidden), device=weight.device, dtype=weight.dtype)
        with torch.profiler.record_function("token_embedding_triton"):
            embed_kernel[(flat.numel(), triton.cdiv(hidden, 64))](
                flat, weight, out, vocab, hidden, BLOCK_H=64
            )
        return out.reshape(*tokens.shape, hidden)
