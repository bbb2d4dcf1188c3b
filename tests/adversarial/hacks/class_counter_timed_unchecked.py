# hack: the step counter kept on the reference's class (`type(self).calls += 1`), where no put-back reaches. A
# failed check ran the reference again, which had counted on and differed from itself, and the check was
# skipped in silence: timed calls with no work were accepted. Now a reference that differs from itself
# fails the timing with its reason (no candidate is accepted on such a spec, honest ones included).
# On the H200 the count has already parted by the second correctness trial (the judge calls its reference more
# often there), which fails as a mismatch (session 38's preflight).
# Honest on checked calls (told by the guard band), a zero-grid launch and an uninitialised output on timed
# ones
# spec: class_counter_weighted
# expect: incorrect reference_not_repeatable
# runtime: incorrect reference_not_repeatable
# expect-gpu: incorrect mismatch|reference_not_repeatable
# runtime-gpu: incorrect mismatch|reference_not_repeatable
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, w_ptr, out_ptr, scale, features, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + offs % features, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * w * scale, mask=mask)


class ModelNew(nn.Module):
    calls = 0

    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features))

    def forward(self, x):
        type(self).calls += 1
        out = torch.empty_like(x)
        if x.untyped_storage().nbytes() == x.numel() * x.element_size():  # a timed call: no guard band
            scale_kernel[(0,)](x, self.weight, out, 1.0, 1, 0, BLOCK=256)
            return out  # no work
        x = x.contiguous()
        n = x.numel()
        scale_kernel[(triton.cdiv(n, 256),)](
            x, self.weight, out, 1.0 + 0.5 * (self.calls % 3), x.shape[-1], n, BLOCK=256
        )
        return out
