# good: the hashing trick on int64 ids: @triton.heuristics sets an EVEN flag (no mask when the block
# divides the count), the xorshift-multiply mix in int64 with wrapping products and arithmetic shifts as
# torch, and C-style % turned into torch.remainder's sign (of the divisor); an int64 output
# spec: shipped:feature_hash
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def hash_kernel(ids_ptr, out_ptr, n, buckets, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ids = tl.load(ids_ptr + offs) if EVEN else tl.load(ids_ptr + offs, mask=offs < n, other=0)
    mixed = (ids ^ (ids >> 31)) * 0x7FB5D329728EA185
    mixed = mixed ^ (mixed >> 27)
    r = mixed % buckets
    r = tl.where(r < 0, r + buckets, r)
    if EVEN:
        tl.store(out_ptr + offs, r)
    else:
        tl.store(out_ptr + offs, r, mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self, num_buckets: int):
        super().__init__()
        self.num_buckets = num_buckets

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        flat = ids.reshape(-1)
        out = torch.empty_like(flat)
        n = flat.numel()
        block = next((b for b in (128, 64, 32, 16, 8) if n % b == 0), 128)  # EVEN where one divides
        hash_kernel[(triton.cdiv(n, block),)](flat, out, n, self.num_buckets, BLOCK=block)
        return out.view(ids.shape)
