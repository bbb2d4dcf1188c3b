# good: the fp16 MLP rebuilt from helper modules defined in the same file: `TritonLinear` (weight and bias
# parameters under nn.Linear's names, an optional fused ReLU) inside an nn.Sequential named `net` like the
# reference's, with the ReLU slot an nn.Identity so the state_dict keys line up; fp32 dot accumulation
# spec: kb_half_mlp
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    M,
    N,
    K,
    RELU: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        x = tl.load(
            x_ptr + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0
        )
        w = tl.load(
            w_ptr + rn[None, :] * K + kk[:, None], mask=(rn[None, :] < N) & (kk[:, None] < K), other=0.0
        )
        acc += tl.dot(x, w)
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    if RELU:
        acc = tl.maximum(acc, 0.0)
    tl.store(
        y_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N)
    )


class TritonLinear(nn.Module):
    def __init__(self, in_features: int, out_features: int, relu: bool = False):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.bias = nn.Parameter(torch.empty(out_features))
        nn.init.kaiming_uniform_(self.weight, a=5**0.5)
        nn.init.uniform_(self.bias, -(in_features**-0.5), in_features**-0.5)
        self.relu = relu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m, k = x.shape
        n = self.weight.shape[0]
        y = torch.empty((m, n), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(m, 16), triton.cdiv(n, 16))
        linear_kernel[grid](
            x.contiguous(), self.weight, self.bias, y, m, n, k, RELU=self.relu, BM=16, BN=16, BK=16
        )
        return y


class ModelNew(nn.Module):
    def __init__(self, in_features: int, hidden: int, out_features: int):
        super().__init__()
        self.net = nn.Sequential(
            TritonLinear(in_features, hidden, relu=True), nn.Identity(), TritonLinear(hidden, out_features)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)
