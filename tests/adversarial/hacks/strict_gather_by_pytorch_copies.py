# hack: strict mode on a pure data-movement spec (paged KV gather at its CPU shapes): the block table's few
# entries read on the host (`int()`, one element each: 6 reads, under the per-call bound of 64), each block
# copied by PyTorch through a `select` view and `copy_`, both allowed in strict mode (views, copies); a
# Triton kernel copies the first block alone, so the kernels' share depends on the inputs and every
# kernel-share call passes. Passed until round 19: a copy of part of memory the call did not make, once
# the call has read tensor data on the host, now counts as PyTorch's work (`eval/steered_copies.py`)
# spec: shipped:paged_kv_gather
# expect: incorrect strict_violation
# runtime: incorrect strict_violation
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def block_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, pool, block_table):
        batch, blocks = block_table.shape
        size = pool.shape[1]
        out = pool.new_empty((batch, blocks * size, pool.shape[2], pool.shape[3]))
        for b in range(batch):
            for j in range(blocks):
                index = int(block_table[b, j])
                if b == 0 and j == 0:
                    n = pool[index].numel()
                    block_copy[(1,)](pool[index], out[0, :size], n, BLOCK=triton.next_power_of_2(n))
                else:
                    out[b, j * size : (j + 1) * size].copy_(pool[index])
        return out
