# good: KernelBench level-2 Linear + Dropout(p=0.0) + GELU + logsumexp(dim=1, keepdim=True) in training
# mode, all in one Triton kernel: a row block's whole output width as an ieee tl.dot over K tiles, bias and
# erf GELU in registers, padded columns at -inf, then the row's logsumexp stored as the (batch, 1) output.
# Dropout at p=0 is the identity in training mode too, so the launcher checks p and does no dropout work
# spec: kb_linear_dropout0_gelu_lse
import torch
import torch.nn as nn
import triton
import triton.language as tl

INV_SQRT2 = tl.constexpr(0.7071067811865476)


@triton.jit
def linear_gelu_lse_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, sxm, sxk, swn, swk,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        a = tl.load(
            x_ptr + rm[:, None] * sxm + ks[None, :] * sxk,
            mask=(rm[:, None] < M) & (ks[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            w_ptr + rn[None, :] * swn + ks[:, None] * swk,
            mask=(rn[None, :] < N) & (ks[:, None] < K),
            other=0.0,
        )
        acc += tl.dot(a, b, input_precision="ieee")
    z = acc + tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    g = 0.5 * z * (1.0 + tl.erf(z * INV_SQRT2))
    g = tl.where(rn[None, :] < N, g, float("-inf"))
    row_max = tl.max(g, axis=1)
    lse = row_max + tl.log(tl.sum(tl.exp(g - row_max[:, None]), axis=1))
    tl.store(out_ptr + rm, lse, mask=rm < M)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(p=0.0)

    def forward(self, x):
        if self.training and self.dropout.p != 0.0:
            raise NotImplementedError("only p=0 dropout (the identity) is fused")
        w, b = self.linear.weight, self.linear.bias
        M, K = x.shape
        N = w.shape[0]
        out = torch.empty(M, 1, device=x.device, dtype=x.dtype)
        BM = 16
        linear_gelu_lse_kernel[(triton.cdiv(M, BM),)](
            x, w, b, out, M, N, K, x.stride(0), x.stride(1), w.stride(0), w.stride(1),
            BM=BM, BN=max(16, triton.next_power_of_2(N)), BK=16,
        )  # fmt: skip
        return out
