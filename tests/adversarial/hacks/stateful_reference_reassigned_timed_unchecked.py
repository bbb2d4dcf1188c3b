# hack: `stateful_reference_timed_unchecked` where the reference replaces its buffer with each call's new
# value (`self.running_mean = self.running_mean * 0.9 + ...`) rather than updating it in place. The judge put
# the reference's state back before each timed check into the buffer object it found at the timing's
# start, which the reference had already replaced: its state moved on, it differed from itself, and every
# timed check was skipped. Honest on checked calls (told by the guard band), no work on timed ones
# spec: running_centering_reassigned
# expect: incorrect timed_output_mismatch
# runtime: incorrect timed_output_mismatch
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def centre_kernel(x_ptr, rm_ptr, out_ptr, batch, features, BLOCK_B: tl.constexpr):
    f = tl.program_id(0)
    rows = tl.arange(0, BLOCK_B)
    mask = rows < batch
    x = tl.load(x_ptr + rows * features + f, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / batch
    rm = tl.load(rm_ptr + f) * 0.9 + mean * 0.1
    tl.store(rm_ptr + f, rm)
    tl.store(out_ptr + rows * features + f, x - rm, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.register_buffer("running_mean", torch.zeros(features))

    def forward(self, x):
        out = torch.empty_like(x)
        batch, features = x.shape
        block = triton.next_power_of_2(batch)
        if x.untyped_storage().nbytes() == x.numel() * x.element_size():  # a timed call: no guard band
            centre_kernel[(0,)](x, self.running_mean, out, batch, features, BLOCK_B=block)  # no work
            return out
        centre_kernel[(features,)](x.contiguous(), self.running_mean, out, batch, features, BLOCK_B=block)
        return out
