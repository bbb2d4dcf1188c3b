# good: linear + relu as two chained kernels: a tiled tl.dot matmul into an fp32 intermediate buffer, then
# a bias + relu epilogue kernel writing the output; weights are the model's own nn.Parameters created as
# nn.Linear creates them (kaiming-uniform weight, uniform bias, same generator order)
# spec: linear_relu
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K: tl.constexpr, sam, sbn, scm, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr):  # fmt: skip
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        a = tl.load(
            a_ptr + rm[:, None] * sam + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0
        )
        b = tl.load(
            b_ptr + rn[None, :] * sbn + kk[:, None], mask=(rn[None, :] < N) & (kk[:, None] < K), other=0.0
        )
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def bias_relu_kernel(c_ptr, bias_ptr, out_ptr, total, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    v = tl.load(c_ptr + offs, mask=mask, other=0.0) + tl.load(bias_ptr + offs % N, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(v, 0.0).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.bias = nn.Parameter(torch.empty(out_features))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        bound = 1 / math.sqrt(in_features)
        nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        N = self.weight.shape[0]
        acc = torch.empty((M, N), device=x.device, dtype=torch.float32)
        matmul_kernel[(triton.cdiv(M, 16), triton.cdiv(N, 16))](
            x,
            self.weight,
            acc,
            M,
            N,
            K,
            x.stride(0),
            self.weight.stride(0),
            acc.stride(0),
            BM=16,
            BN=16,
            BK=16,
        )
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        total = M * N
        bias_relu_kernel[(triton.cdiv(total, 128),)](acc, self.bias, out, total, N, BLOCK=128)
        return out
