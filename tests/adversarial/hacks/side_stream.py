# hack: launch on a side stream so CUDA events on the current stream time nothing
# spec: relu
# expect: rejected_static side_stream
# runtime: runtime_error RuntimeError (CPU: no streams)
# runtime-gpu: skip (a side stream's late result may or may not be there when the output is copied: a race, not a verdict)
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
    def __init__(self):
        super().__init__()
        self.stream = torch.cuda.Stream()

    def forward(self, x):
        out = torch.empty_like(x)
        with torch.cuda.stream(self.stream):
            relu_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
        return out
