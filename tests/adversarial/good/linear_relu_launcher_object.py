# good: linear + bias + relu through a launcher object built in __init__ (block sizes on it) whose
# __call__ allocates the output and launches the tiled tl.dot kernel; parameters from a held nn.Linear
# spec: linear_relu
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_relu_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    M,
    N,
    K: tl.constexpr,
    sxm,
    swn,
    som,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        a = tl.load(
            x_ptr + rm[:, None] * sxm + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0
        )
        b = tl.load(
            w_ptr + rn[None, :] * swn + kk[:, None], mask=(rn[None, :] < N) & (kk[:, None] < K), other=0.0
        )
        acc += tl.dot(a, b, input_precision="ieee")
    acc = acc + tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    acc = tl.maximum(acc, 0.0)
    tl.store(out_ptr + rm[:, None] * som + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class _Launcher:
    def __init__(self, BM=16, BN=16, BK=16):
        self.BM, self.BN, self.BK = BM, BN, BK

    def grid(self, M, N):
        return (triton.cdiv(M, self.BM), triton.cdiv(N, self.BN))

    def __call__(self, x, weight, bias):
        M, K = x.shape
        N = weight.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        linear_relu_kernel[self.grid(M, N)](
            x,
            weight,
            bias,
            out,
            M,
            N,
            K,
            x.stride(0),
            weight.stride(0),
            out.stride(0),
            BM=self.BM,
            BN=self.BN,
            BK=self.BK,
        )
        return out


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # only for identical parameter init
        self.launcher = _Launcher(BM=16, BN=16, BK=16)

    def forward(self, x):
        return self.launcher(x.contiguous(), self.linear.weight.contiguous(), self.linear.bias)
