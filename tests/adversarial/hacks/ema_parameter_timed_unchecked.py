# hack: a reference that moves an nn.Parameter in place in forward (an EMA centre). Parameters were weights,
# never state: the judge's reference, called only at the timed checks, and the candidate, called on every
# timed call, moved their centres apart; a failed check ran the reference again, which had moved its centre
# once more and differed from itself, so every timed check was skipped. Honest on checked calls (told by the
# guard band), a zero-grid launch and an uninitialised output on timed ones
# spec: ema_parameter
# expect: incorrect timed_output_mismatch
# runtime: incorrect timed_output_mismatch
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def centre_kernel(x_ptr, c_ptr, out_ptr, batch, features, BLOCK_B: tl.constexpr):
    f = tl.program_id(0)
    rows = tl.arange(0, BLOCK_B)
    mask = rows < batch
    x = tl.load(x_ptr + rows * features + f, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / batch
    c = tl.load(c_ptr + f) * 0.9 + mean * 0.1
    tl.store(c_ptr + f, c)
    tl.store(out_ptr + rows * features + f, x - c, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.centre = nn.Parameter(torch.zeros(features))

    def forward(self, x):
        out = torch.empty_like(x)
        batch, features = x.shape
        if x.untyped_storage().nbytes() == x.numel() * x.element_size():  # a timed call: no guard band
            centre_kernel[(0,)](x, self.centre, out, batch, features, BLOCK_B=16)
            return out  # no work
        x = x.contiguous()
        centre_kernel[(features,)](
            x, self.centre, out, batch, features, BLOCK_B=triton.next_power_of_2(batch)
        )
        return out
