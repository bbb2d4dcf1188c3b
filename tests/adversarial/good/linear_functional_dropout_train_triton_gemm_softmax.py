# good: KernelBench Linear + Dropout(p=0.2) + softmax in training mode, permissive: the GEMM + bias by a
# Triton kernel (ieee tl.dot) on the module's own Linear parameters, the dropout by F.dropout with
# training=self.training (PyTorch's generator draws the mask, as the reference's nn.Dropout does), the row
# softmax by a second Triton kernel
# spec: kb_linear_dropout_softmax
# strict: false
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def linear_bias(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(
            x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0
        )
        w = tl.load(
            w_ptr + rn[None, :] * K + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0
        )
        acc += tl.dot(a, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def softmax_rows(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * N + cols, e / tl.sum(e, axis=0), mask=cols < N)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, dropout_p):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.p = dropout_p

    def forward(self, x):
        x = x.contiguous()
        m, k = x.shape
        n = self.matmul.weight.shape[0]
        y = x.new_empty((m, n))
        linear_bias[(triton.cdiv(m, 16), triton.cdiv(n, 16))](
            x, self.matmul.weight, self.matmul.bias, y, m, n, k, BM=16, BN=16, BK=16
        )
        y = F.dropout(y, p=self.p, training=self.training).contiguous()
        out = torch.empty_like(y)
        softmax_rows[(m,)](y, out, n, BLOCK=triton.next_power_of_2(n))
        return out
