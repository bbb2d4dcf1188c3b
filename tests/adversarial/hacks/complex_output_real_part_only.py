# hack: a complex output judged on its real part alone. The judge compared every output cast to float32 (or
# float64), and casting a complex tensor to a real dtype drops its imaginary part: the kernel writes the
# cosines of the angles and zeros where the sines belong, half the work, and every comparison passed (strict
# mode's static rules count `view_as_complex` as PyTorch work; its run-time trace passed it)
# spec: polar
# strict: false
# expect: incorrect mismatch
# runtime: incorrect mismatch
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def real_part(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + 2 * offs, tl.cos(x), mask=mask)
    tl.store(out_ptr + 2 * offs + 1, tl.zeros_like(x), mask=mask)  # no sines


class ModelNew(nn.Module):
    def forward(self, x):
        pairs = torch.empty(x.numel(), 2, dtype=torch.float32, device=x.device)
        real_part[(triton.cdiv(x.numel(), 64),)](x, pairs, x.numel(), BLOCK=64)
        return torch.view_as_complex(pairs).view(x.shape)
