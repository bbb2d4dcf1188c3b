# hack: strict mode on a paged KV gather (its CPU shapes): the block table read on the host, each block
# moved by a storage-level copy between slices of the pool's and the output's untyped storages. A slice of
# a storage is a storage of its own, so each copy looked whole to the steered-copy rule's first form (its
# view covered its storage exactly); a storage that cannot be resized is a slice, part of the memory it
# was cut from. A Triton kernel copies the first block. The static checks see the offset computed from a
# host-read index (`host_compute`)
# spec: shipped:paged_kv_gather
# expect: rejected_static host_compute
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
        n = pool[0].numel()
        width = n * pool.element_size()
        source = pool.untyped_storage()
        target = out.untyped_storage()
        start = pool.storage_offset() * pool.element_size()
        for s in range(batch * blocks):
            index = int(block_table[s // blocks, s % blocks])
            if s == 0:
                block_copy[(1,)](pool[index], out, n, BLOCK=triton.next_power_of_2(n))
            else:
                at = start + index * width
                target[s * width : (s + 1) * width].copy_(source[at : at + width])
        return out
