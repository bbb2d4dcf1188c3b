# good: token embedding (bf16) with block pointers: one program per (token block, hidden block) loads the
# token ids, then each token's row tile through tl.make_block_ptr (boundary_check on the hidden axis) and
# stores it through another; the output by weight.new_empty with the ids' shape plus the hidden size
# spec: shipped:token_embedding
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def embed_rows(ids_ptr, w_ptr, out_ptr, n, hidden, BT: tl.constexpr, BH: tl.constexpr):
    t0 = tl.program_id(0) * BT
    h0 = tl.program_id(1) * BH
    for i in tl.static_range(BT):
        if t0 + i < n:
            tok = tl.load(ids_ptr + t0 + i)
            src = tl.make_block_ptr(w_ptr + tok * hidden, (hidden,), (1,), (h0,), (BH,), (0,))
            dst = tl.make_block_ptr(out_ptr + (t0 + i) * hidden, (hidden,), (1,), (h0,), (BH,), (0,))
            tl.store(dst, tl.load(src, boundary_check=(0,)), boundary_check=(0,))


class ModelNew(nn.Module):
    def __init__(self, vocab_size: int, hidden: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden)

    def forward(self, tokens):
        ids = tokens.contiguous()
        w = self.embed.weight
        hidden = w.shape[1]
        out = w.new_empty((*ids.shape, hidden))
        n = ids.numel()
        embed_rows[(triton.cdiv(n, 4), triton.cdiv(hidden, 64))](ids, w, out, n, hidden, BT=4, BH=64)
        return out
