# good: a module with a random projection buffer, a random gain parameter and a linspace offset buffer, all
# registered in __init__ in the reference's order (so the same seed gives the same values); one Triton
# kernel computes tanh(x @ projection) * gain + offset with an ieee tl.dot, tanh from the sigmoid
# spec: kb_buffer_projection
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def projection_kernel(
    x_ptr, p_ptr, g_ptr, o_ptr, y_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        a = tl.load(
            x_ptr + rm[:, None] * K + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0
        )
        p = tl.load(
            p_ptr + ks[:, None] * N + rn[None, :], mask=(ks[:, None] < K) & (rn[None, :] < N), other=0.0
        )
        acc += tl.dot(a, p, input_precision="ieee")
    t = 2.0 * tl.sigmoid(2.0 * acc) - 1.0
    gain = tl.load(g_ptr + rn, mask=rn < N, other=0.0)
    offset = tl.load(o_ptr + rn, mask=rn < N, other=0.0)
    tl.store(
        y_ptr + rm[:, None] * N + rn[None, :],
        t * gain[None, :] + offset[None, :],
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.register_buffer("projection", torch.randn(in_features, out_features) / in_features**0.5)
        self.gain = nn.Parameter(torch.randn(out_features))
        self.register_buffer("offset", torch.linspace(-1.0, 1.0, out_features))

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        N = self.gain.shape[0]
        y = torch.empty(M, N, device=x.device, dtype=x.dtype)
        projection_kernel[(triton.cdiv(M, 16), triton.cdiv(N, 16))](
            x, self.projection, self.gain, self.offset, y, M, N, K, BM=16, BN=16, BK=16
        )
        return y
