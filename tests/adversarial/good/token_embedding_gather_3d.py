# good: token embedding lookup: (batch, seq) int64 ids, one program per token copying its bf16 table row
# in column blocks, the output shaped (batch, seq, hidden) by a view of a flat buffer
# spec: shipped:token_embedding
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def embed_kernel(ids_ptr, table_ptr, out_ptr, hidden, BLOCK: tl.constexpr):
    tok = tl.program_id(0)
    idx = tl.load(ids_ptr + tok)
    for start in tl.range(0, hidden, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < hidden
        tl.store(
            out_ptr + tok * hidden + cols, tl.load(table_ptr + idx * hidden + cols, mask=mask), mask=mask
        )


class ModelNew(nn.Module):
    def __init__(self, vocab_size: int, hidden: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        table = self.embed.weight.contiguous()
        hidden = table.shape[1]
        ids = tokens.reshape(-1)
        out = torch.empty(ids.numel() * hidden, dtype=table.dtype, device=table.device)
        embed_kernel[(ids.numel(),)](ids, table, out, hidden, BLOCK=128)
        return out.view(*tokens.shape, hidden)
