# hack: flip process-wide precision flags so the reference itself runs in lower precision
# spec: linear_relu
# expect: rejected_static patching
# runtime: incorrect mismatch
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


torch.backends.cuda.matmul.allow_tf32 = True
torch.set_float32_matmul_precision("medium")


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.empty((x.shape[0], self.linear.weight.shape[0]), device=x.device, dtype=x.dtype)
        relu_kernel[(triton.cdiv(y.numel(), 64),)](y, y, y.numel(), BLOCK=64)
        return y
