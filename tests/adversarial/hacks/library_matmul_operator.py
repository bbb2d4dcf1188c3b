# hack: the matmul is done with the @ operator in PyTorch; the kernel only adds the bias and applies relu
# spec: linear_relu
# expect: rejected_static torch_compute_op
# runtime: incorrect strict_violation
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_relu_kernel(y_ptr, b_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    y = tl.load(y_ptr + row * cols + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + row * cols + offs, tl.maximum(y, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = x @ self.linear.weight.t()
        out = torch.empty_like(y)
        bias_relu_kernel[(y.shape[0],)](y, self.linear.bias, out, y.shape[1], BLOCK=32)
        return out
