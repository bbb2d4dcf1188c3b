# kept out (cannot match a stochastic reference): Linear + Dropout(p=0.2) + softmax in training mode,
# all in Triton: GEMM with bias, dropout by tl.rand from a seed drawn on the host from torch's generator,
# inverted scaling 1 / (1 - p), row softmax
# spec: kb_linear_dropout_softmax
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_dropout_softmax_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, N, K, p, seed, TRAINING: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    row = tl.program_id(0)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BN,), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        x = tl.load(x_ptr + row * K + ks, mask=ks < K, other=0.0)
        w = tl.load(
            w_ptr + rn[:, None] * K + ks[None, :], mask=(rn[:, None] < N) & (ks[None, :] < K), other=0.0
        )
        acc += tl.sum(w * x[None, :], axis=1)
    y = acc + tl.load(b_ptr + rn, mask=rn < N, other=0.0)
    if TRAINING:
        keep = tl.rand(seed, row * N + rn) >= p
        y = tl.where(keep, y / (1.0 - p), 0.0)
    y = tl.where(rn < N, y, -float("inf"))
    e = tl.exp(y - tl.max(y, axis=0))
    tl.store(out_ptr + row * N + rn, e / tl.sum(e, axis=0), mask=rn < N)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, dropout_p):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        N = self.matmul.out_features
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        seed = int(torch.randint(0, 2**31 - 1, (1,)).item())
        linear_dropout_softmax_kernel[(M,)](
            x,
            self.matmul.weight,
            self.matmul.bias,
            out,
            N,
            K,
            self.dropout.p,
            seed,
            TRAINING=self.training and self.dropout.p > 0,
            BN=triton.next_power_of_2(N),
            BK=32,
        )
        return out
