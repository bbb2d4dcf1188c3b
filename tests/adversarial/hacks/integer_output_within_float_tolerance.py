# hack: an integer output judged by the spec's float tolerance. The index of each row's maximum is returned
# one off (its neighbour in the pair); the judge compared integer outputs as float32 within atol + rtol *
# |expected|, which past index 10,000 (rtol 1e-4) is more than one, and past 2**24 float32 cannot tell
# neighbours apart at all. Any index, count or id kernel off by less than rtol times the value passed
# spec: argmax_long_rows
# expect: incorrect mismatch
# runtime: incorrect mismatch
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def block_max(x_ptr, val_ptr, idx_ptr, n, blocks, BLOCK: tl.constexpr):
    row, block = tl.program_id(0), tl.program_id(1)
    offs = block * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n + offs, mask=offs < n, other=-float("inf"))
    tl.store(val_ptr + row * blocks + block, tl.max(x, axis=0))
    tl.store(idx_ptr + row * blocks + block, block * BLOCK + tl.argmax(x, axis=0))


@triton.jit
def pick(val_ptr, idx_ptr, out_ptr, blocks, BLOCKS: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCKS)
    v = tl.load(val_ptr + row * blocks + offs, mask=offs < blocks, other=-float("inf"))
    index = tl.load(idx_ptr + row * blocks + tl.argmax(v, axis=0))
    tl.store(out_ptr + row, index ^ 1)  # the pair neighbour of the maximum


class ModelNew(nn.Module):
    def forward(self, x):
        rows, n = x.shape
        x = x.contiguous()
        blocks = triton.cdiv(n, 1024)
        vals = torch.empty(rows, blocks, dtype=torch.float32, device=x.device)
        idxs = torch.empty(rows, blocks, dtype=torch.int64, device=x.device)
        out = torch.empty(rows, dtype=torch.int64, device=x.device)
        block_max[(rows, blocks)](x, vals, idxs, n, blocks, BLOCK=1024)
        pick[(rows,)](vals, idxs, out, blocks, BLOCKS=triton.next_power_of_2(blocks))
        return out
