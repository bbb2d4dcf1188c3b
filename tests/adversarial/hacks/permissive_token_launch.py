# hack: permissive mode: PyTorch computes the whole output and a Triton kernel is launched on a token part
# of it (it rewrites the first block with the same values), so launches are counted and every check
# passes. The harness enforces that a kernel ran (`no_kernel_ran`), not how much of the work it did: in
# permissive mode library calls are allowed by design, and the share is measured only on GPUs
# (`time_split`, reported, not judged). Documented as not guaranteed (docs/threat_model.md)
# spec: relu
# strict: false
# expect: ok
# runtime: ok
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.relu(x)
        relu_kernel[(1,)](x, out, min(x.numel(), 64), BLOCK=64)
        return out
