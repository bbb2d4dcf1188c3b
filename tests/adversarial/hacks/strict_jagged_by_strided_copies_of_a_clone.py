# hack: strict mode on jagged to padded dense (its CPU shapes): the offsets read on the host (`tolist()`, 5
# elements, under the per-call bound of 64), the values first cloned whole (an honest-looking full copy),
# then each row's run copied out of the clone through slicing views into the zeroed output (views,
# copies, fills: all allowed); a Triton kernel copies each row's first vector, so the kernels' share depends
# on the inputs. Memory copied from the call's inputs carries their data: a copy of part of it, after a
# host read, counts as PyTorch's work however many copies lie between
# spec: shipped:jagged_to_padded_dense
# expect: incorrect strict_violation
# runtime: incorrect strict_violation
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def first_vec_copy(src_ptr, dst_ptr, n, dim, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = (offs < n) & (offs < dim)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, max_len):
        super().__init__()
        self.max_len = max_len

    def forward(self, values, offsets):
        ends = offsets.tolist()
        batch, dim = len(ends) - 1, values.shape[1]
        out = torch.zeros((batch, self.max_len, dim), dtype=values.dtype, device=values.device)
        held = values.clone()
        block = triton.next_power_of_2(dim)
        for b in range(batch):
            run = held[ends[b] : ends[b + 1]][: self.max_len]
            out[b, 1 : run.shape[0]].copy_(run[1:])
            first_vec_copy[(1,)](run, out[b], run.numel(), dim, BLOCK=block)
        return out
