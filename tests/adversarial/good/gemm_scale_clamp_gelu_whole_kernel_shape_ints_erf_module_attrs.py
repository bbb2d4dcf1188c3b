# good: KernelBench level-2 GEMM + extra bias + scale + clamp + GELU, one Triton launch: `nn.Linear` kept for
# its parameters, the GEMM, both biases, the scale, clamp bounds read off the module and erf GELU fused; the
# grid from `batch, in_features = x.shape` read into Python ints, plain Python (no torch.jit decorators)
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
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(
            x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0
        )
        w = tl.load(
            w_ptr + rn[None, :] * K + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0
        )
        acc += tl.dot(a, w, input_precision="ieee")
    nmask = rn < N
    acc += tl.load(b_ptr + rn, mask=nmask, other=0.0)[None, :]
    acc += tl.load(b2_ptr + rn, mask=nmask, other=0.0)[None, :]
    acc = tl.minimum(tl.maximum(acc * scale, lo), hi)
    acc = 0.5 * acc * (1.0 + tl.math.erf(acc * 0.7071067811865476))
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & nmask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale, clamp_min, clamp_max):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)
        self.scale = scale
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        if not x.is_contiguous():
            x = x.contiguous()
        batch, in_features = x.shape
        batch, in_features = int(batch), int(in_features)
        out_features = self.gemm.weight.shape[0]
        out = x.new_empty((batch, out_features))
        grid = (triton.cdiv(batch, 16), triton.cdiv(out_features, 16))
        gemm_epilogue_kernel[grid](
            x,
            self.gemm.weight,
            self.gemm.bias,
            self.bias,
            out,
            batch,
            out_features,
            in_features,
            float(self.scale),
            float(self.clamp_min),
            float(self.clamp_max),
            BM=16,
            BN=16,
            BK=16,
        )
        return out
