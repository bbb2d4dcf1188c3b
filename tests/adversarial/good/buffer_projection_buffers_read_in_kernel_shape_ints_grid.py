# good: KernelBench-style projection by a registered buffer, all Triton in one launch: the
# `register_buffer` projection and offset (created in the reference's order, so the same seed gives the
# same values) and the gain parameter read by the kernel, x @ P then tanh, gain and offset fused;
# `M, K = x.shape` read into Python ints for the grid, `torch.empty` on `x.device`
# spec: kb_buffer_projection
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def proj_tanh_kernel(
    x_ptr, p_ptr, gain_ptr, off_ptr, out_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(
            x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0
        )
        p = tl.load(
            p_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0
        )
        acc += tl.dot(a, p, input_precision="ieee")
    t = 2.0 * tl.sigmoid(2.0 * acc) - 1.0
    nmask = rn < N
    y = (
        t * tl.load(gain_ptr + rn, mask=nmask, other=0.0)[None, :]
        + tl.load(off_ptr + rn, mask=nmask, other=0.0)[None, :]
    )
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], y, mask=(rm[:, None] < M) & nmask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.register_buffer("projection", torch.randn(in_features, out_features) / in_features**0.5)
        self.gain = nn.Parameter(torch.randn(out_features))
        self.register_buffer("offset", torch.linspace(-1.0, 1.0, out_features))

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        N = self.projection.shape[1]
        out = torch.empty((int(M), int(N)), device=x.device, dtype=torch.float32)
        grid = (triton.cdiv(int(M), 16), triton.cdiv(int(N), 16))
        proj_tanh_kernel[grid](x, self.projection, self.gain, self.offset, out, M, N, K, BM=16, BN=16, BK=16)
        return out
