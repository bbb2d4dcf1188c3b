# good: DLRM's top MLP in bf16: ModelNew builds the same nn.Sequential (so its Linear weights are the
# reference's) and never calls it; forward walks its Linear layers and launches one Triton linear per
# layer, bf16 tl.dot with fp32 accumulation and bias, the activation (relu, or sigmoid after the last) a
# constexpr chosen per layer, each layer's output rounded to bf16 as the reference's is
# spec: shipped:dlrm_top_mlp
import torch
import torch.nn as nn
import triton
import triton.language as tl

RELU = 1
SIGMOID = 2


@triton.jit
def linear_act_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    M,
    N,
    K,
    ACT: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(
            x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0
        )
        w = tl.load(
            w_ptr + rn[None, :] * K + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0
        )
        acc += tl.dot(a, w)
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    y = acc.to(tl.bfloat16).to(tl.float32)
    y = tl.maximum(y, 0.0) if ACT == 1 else tl.sigmoid(y)
    tl.store(
        out_ptr + rm[:, None] * N + rn[None, :], y.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N)
    )


class ModelNew(nn.Module):
    def __init__(self, in_features: int, width1: int, width2: int, width3: int):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(in_features, width1),
            nn.ReLU(),
            nn.Linear(width1, width1),
            nn.ReLU(),
            nn.Linear(width1, width2),
            nn.ReLU(),
            nn.Linear(width2, width3),
            nn.ReLU(),
            nn.Linear(width3, 1),
            nn.Sigmoid(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.contiguous()
        linears = [m for m in self.layers if isinstance(m, nn.Linear)]
        for index, layer in enumerate(linears):
            M, K = h.shape
            N = layer.out_features
            out = torch.empty((M, N), device=h.device, dtype=h.dtype)
            act = SIGMOID if index == len(linears) - 1 else RELU
            grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
            linear_act_kernel[grid](h, layer.weight, layer.bias, out, M, N, K, ACT=act, BM=16, BN=16, BK=32)
            h = out
        return h
