# good: KernelBench level-2 Linear + Dropout(p=0.2) + softmax in training mode: the linear and the dropout
# by the module's own PyTorch layers (the dropout's random mask drawn from PyTorch's generator, as the
# reference draws it), the row softmax in Triton (permissive)
# spec: kb_linear_dropout_softmax
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, dropout_p):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, x):
        y = self.dropout(self.matmul(x)).contiguous()
        out = torch.empty_like(y)
        softmax_kernel[(y.shape[0],)](y, out, y.shape[1], BLOCK=triton.next_power_of_2(y.shape[1]))
        return out
