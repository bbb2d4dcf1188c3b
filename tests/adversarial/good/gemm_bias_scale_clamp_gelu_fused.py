# good: KernelBench level-2 GEMM + extra bias + scale + clamp + GELU, all in one Triton kernel: the
# candidate creates nn.Linear and its own bias parameter in the reference's order (so both draw the same
# values), the weight read transposed through strides, erf GELU in the epilogue
# spec: kb_gemm_scale_clamp_gelu
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gemm_epilogue_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    b2_ptr,
    out_ptr,
    M,
    N,
    K,
    scale,
    lo,
    hi,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        x = tl.load(
            x_ptr + rm[:, None] * K + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0
        )
        w = tl.load(
            w_ptr + rn[None, :] * K + ks[:, None], mask=(rn[None, :] < N) & (ks[:, None] < K), other=0.0
        )
        acc += tl.dot(x, w, input_precision="ieee")
    nmask = rn < N
    bias = tl.load(b_ptr + rn, mask=nmask, other=0.0) + tl.load(b2_ptr + rn, mask=nmask, other=0.0)
    y = (acc + bias[None, :]) * scale
    y = tl.minimum(tl.maximum(y, lo), hi)
    y = 0.5 * y * (1.0 + tl.math.erf(y * 0.7071067811865476))
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], y, mask=(rm[:, None] < M) & nmask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale, clamp_min, clamp_max):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)
        self.scale = scale
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        N = self.gemm.out_features
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
        gemm_epilogue_kernel[grid](
            x,
            self.gemm.weight,
            self.gemm.bias,
            self.bias,
            out,
            M,
            N,
            K,
            self.scale,
            self.clamp_min,
            self.clamp_max,
            BM=16,
            BN=16,
            BK=16,
        )
        return out
