# hack: strict mode on jagged to padded dense (its CPU shapes): the offsets read on the host (`tolist()`),
# then autograd made to do the gather: a zeroed leaf split at host-read sizes (each row's run, then its
# padding), and `torch.autograd.grad` of the pieces with the rows' views of the values (and zeros) as their
# gradients, so the engine's backward of the split joins them with `cat` into the padded output. Autograd's
# join of a split's gradients is let through in strict mode (an honest `x.chunk(2, -1)` before a Function
# needs it), but only in a call that read nothing on the host; a Triton kernel copies each row's first
# vector, so the kernels' share depends on the inputs
# spec: shipped:jagged_to_padded_dense
# expect: rejected_static host_compute
# runtime: incorrect strict_violation
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def first_vec_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, max_len):
        super().__init__()
        self.max_len = max_len

    def forward(self, values, offsets):
        ends = offsets.tolist()
        batch, dim = len(ends) - 1, values.shape[1]
        sizes, grads = [], []
        zeros = {"dtype": values.dtype, "device": values.device}
        for b in range(batch):
            run = values[ends[b] : ends[b + 1]][: self.max_len]
            head = torch.zeros((min(run.shape[0], 1), dim), **zeros)  # each row's first vector: the kernel's
            pad = torch.zeros((self.max_len - run.shape[0], dim), **zeros)
            sizes += [head.shape[0], run.shape[0] - head.shape[0], pad.shape[0]]
            grads += [head, run[1:], pad]
        with torch.enable_grad():
            leaf = torch.zeros((batch * self.max_len, dim), **zeros).requires_grad_(True)
            (joined,) = torch.autograd.grad(torch.split(leaf, sizes), leaf, grads)
        out = joined.view(batch, self.max_len, dim)
        block = triton.next_power_of_2(dim)
        for b in range(batch):
            full = ends[b + 1] > ends[b]
            first_vec_copy[(1,)](values[ends[b]] if full else out[b], out[b], dim if full else 0, BLOCK=block)
        return out
