# good: Linear + BatchNorm1d + ReLU + Dropout(0.5) in eval mode (the spec switches the model to eval): the
# BatchNorm folds to a per-feature scale and shift from the running statistics (perturbed by the judge, so
# they are read, not assumed), Dropout is the identity in eval, and one Triton kernel does the GEMM with
# the folded norm and the ReLU as its epilogue; nothing is updated
# spec: kb_bn_dropout_eval
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_bn_relu_kernel(
    x_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, g_ptr, beta_ptr, y_ptr, M, N, K, eps,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    nmask = rn < N
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        a = tl.load(
            x_ptr + rm[:, None] * K + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0
        )
        w = tl.load(w_ptr + rn[None, :] * K + ks[:, None], mask=nmask[None, :] & (ks[:, None] < K), other=0.0)
        acc += tl.dot(a, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=nmask, other=0.0)[None, :]
    mean = tl.load(rm_ptr + rn, mask=nmask, other=0.0)
    var = tl.load(rv_ptr + rn, mask=nmask, other=1.0)
    scale = tl.load(g_ptr + rn, mask=nmask, other=0.0) * tl.rsqrt(var + eps)
    shift = tl.load(beta_ptr + rn, mask=nmask, other=0.0)
    y = tl.maximum((acc - mean[None, :]) * scale[None, :] + shift[None, :], 0.0)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], y, mask=(rm[:, None] < M) & nmask[None, :])


class ModelNew(nn.Module):
    def __init__(self, features, p):
        super().__init__()
        self.fc = nn.Linear(features, features)
        self.bn = nn.BatchNorm1d(features)
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        if self.training:
            raise NotImplementedError("the eval-mode path only (running statistics, no dropout)")
        x = x.contiguous()
        M, K = x.shape
        N = self.fc.out_features
        y = torch.empty(M, N, device=x.device, dtype=x.dtype)
        bn = self.bn
        linear_bn_relu_kernel[(triton.cdiv(M, 16), triton.cdiv(N, 16))](
            x, self.fc.weight, self.fc.bias, bn.running_mean, bn.running_var, bn.weight, bn.bias, y, M, N, K,
            bn.eps, BM=16, BN=16, BK=16,
        )  # fmt: skip
        return y
