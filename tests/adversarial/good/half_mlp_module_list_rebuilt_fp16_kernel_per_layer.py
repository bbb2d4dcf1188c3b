# good: KernelBench half-precision MLP, all Triton: the reference's `self.net` Sequential kept, the forward
# walks `self.net` and keeps the Linear layers in a local list, one fp16 GEMM launch per layer (fp32
# accumulate, bias and ReLU fused, one rounding to fp16 per layer as PyTorch's fp16 Linear does), the ReLU
# flag from whether another Linear follows
# spec: kb_half_mlp
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fp16_linear_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    M,
    N,
    K,
    RELU: tl.constexpr,
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
    if RELU:
        acc = tl.maximum(acc, 0.0)
    tl.store(
        out_ptr + rm[:, None] * N + rn[None, :],
        acc.to(tl.float16),
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


class ModelNew(nn.Module):
    def __init__(self, in_features, hidden, out_features):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, out_features))

    def forward(self, x):
        linears = [m for m in self.net if isinstance(m, nn.Linear)]
        h = x.contiguous()
        for idx, lin in enumerate(linears):
            M, K = (int(d) for d in h.shape)
            N = lin.out_features
            y = torch.empty((M, N), device=h.device, dtype=torch.float16)
            fp16_linear_kernel[(triton.cdiv(M, 16), triton.cdiv(N, 16))](
                h, lin.weight, lin.bias, y, M, N, K, RELU=idx + 1 < len(linears), BM=16, BN=16, BK=16
            )
            h = y
        return h
