# good: permissive: the matmul by PyTorch (cuBLAS on a GPU), then a Triton epilogue adding the bias and
# applying relu in place on the product; the kernel's share is small and depends on the inputs, so the
# kernel-share calls (launches left out, stale writes replayed) find it needed
# spec: linear_relu
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_relu_inplace(y_ptr, b_ptr, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs % cols, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(y + b, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.matmul(x, self.linear.weight.t()).contiguous()
        n = y.numel()
        bias_relu_inplace[(triton.cdiv(n, 128),)](y, self.linear.bias, n, y.shape[1], BLOCK=128)
        return y
