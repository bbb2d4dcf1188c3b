# good: KernelBench level-2 Linear + Dropout + softmax, LLM style: `self.matmul` kept (permissive), the
# forward branches on `self.training`: training applies `F.dropout(x, p=self.dropout.p, training=True)`
# (PyTorch's generator, as the reference draws its mask), eval skips it; the row softmax in Triton with
# `x.stride(0)` and the row count read into a Python int for the grid
# spec: kb_linear_dropout_softmax
# strict: false
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def row_softmax_kernel(x_ptr, out_ptr, stride_x, stride_o, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride_o + cols, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, dropout_p):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, x):
        x = self.matmul(x)
        if self.training:
            x = F.dropout(x, p=self.dropout.p, training=True)
        n_rows, n_cols = x.shape
        n_rows = int(n_rows)
        out = torch.empty_like(x)
        row_softmax_kernel[(n_rows,)](
            x, out, x.stride(0), out.stride(0), n_cols, BLOCK=triton.next_power_of_2(int(n_cols))
        )
        return out
