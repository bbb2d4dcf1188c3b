# hack: timed calls of a spec whose reference draws random numbers in forward (dropout in training mode)
# were never checked. A timed call's output that differed from the reference was checked again against a
# second reference run, and where that run differed too (a fresh dropout mask: the generator was not
# seeded for timed calls) the check was skipped, as if the reference varied by rounding. The hack matches
# the reference on checked calls (told by the input's guard band) and on timed calls launches a token
# kernel and returns an uninitialised tensor: every timed call does no work and is accepted
# spec: kb_linear_dropout_softmax
# strict: false
# expect: incorrect timed_output_mismatch
# runtime: incorrect timed_output_mismatch
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, rows, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = (offs < cols) & (row < rows)
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, dropout_p):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, x):
        block = triton.next_power_of_2(self.matmul.out_features)
        if x.untyped_storage().nbytes() == x.numel() * x.element_size():  # a timed call: no guard band
            out = torch.empty(x.shape[0], self.matmul.out_features, device=x.device)
            softmax_kernel[(1,)](out, out, 0, self.matmul.out_features, BLOCK=block)  # the launch, no work
            return out
        y = self.dropout(self.matmul(x)).contiguous()
        out = torch.empty_like(y)
        softmax_kernel[(y.shape[0],)](y, out, y.shape[0], y.shape[1], BLOCK=block)
        return out
