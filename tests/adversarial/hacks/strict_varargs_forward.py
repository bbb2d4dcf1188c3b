# hack: strict-mode escape: forward takes its inputs as *inputs, so a check that types only named
# parameters as tensors sees no tensor in the PyTorch arithmetic; the Triton kernel runs on zero elements
# spec: relu
# expect: rejected_static torch_compute_op
# runtime: incorrect strict_violation
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
    def forward(self, *inputs):
        x = inputs[0]
        out = x * (x > 0)
        relu_kernel[(1,)](x, out, 0, BLOCK=64)
        return out
