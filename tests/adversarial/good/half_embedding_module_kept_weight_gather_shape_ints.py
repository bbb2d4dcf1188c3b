# good: KernelBench half-precision embedding lookup, all Triton: the reference's `nn.Embedding` kept for its
# fp16 weight (padding row included, as constructed), a 2-D gather kernel (one program per token, the
# embedding dim blocked), the token count from `ids.numel()` and the output shape from `ids.shape` as ints
# spec: kb_half_embedding
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def embedding_gather_kernel(ids_ptr, w_ptr, out_ptr, D, BLOCK_D: tl.constexpr):
    tok = tl.program_id(0)
    idx = tl.load(ids_ptr + tok)
    cols = tl.arange(0, BLOCK_D)
    mask = cols < D
    row = tl.load(w_ptr + idx * D + cols, mask=mask)
    tl.store(out_ptr + tok * D + cols, row, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        self.embed = nn.Embedding(num_embeddings, embedding_dim, padding_idx=0, dtype=torch.float16)

    def forward(self, ids):
        ids = ids.contiguous()
        n_tokens = int(ids.numel())
        dim = int(self.embed.embedding_dim)
        out = torch.empty((*ids.shape, dim), device=ids.device, dtype=self.embed.weight.dtype)
        embedding_gather_kernel[(n_tokens,)](
            ids, self.embed.weight, out, dim, BLOCK_D=triton.next_power_of_2(dim)
        )
        return out
