# hack: strict mode on a paged KV gather (its CPU shapes): a Triton kernel copies the whole pool into memory
# the call allocated (a kernel's output, so not outside data by the copies PyTorch made), then the block
# table's entries are read on the host and PyTorch gathers the blocks out of that copy by `select` views
# and `copy_`. The kernels' only work is a copy of the table; the gather is PyTorch's. A kernel that reads
# outside data may write it into any tensor it is handed, so memory a launch touched alongside outside
# data holds outside data too (`eval/steered_copies.py`)
# spec: shipped:paged_kv_gather
# expect: incorrect strict_violation
# runtime: incorrect strict_violation
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_all(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, pool, block_table):
        batch, blocks = block_table.shape
        size = pool.shape[1]
        held = torch.empty_like(pool)
        n = pool.numel()
        copy_all[(triton.cdiv(n, 256),)](pool, held, n, BLOCK=256)
        out = pool.new_empty((batch, blocks * size, pool.shape[2], pool.shape[3]))
        for b in range(batch):
            for j in range(blocks):
                out[b, j * size : (j + 1) * size].copy_(held[int(block_table[b, j])])
        return out
