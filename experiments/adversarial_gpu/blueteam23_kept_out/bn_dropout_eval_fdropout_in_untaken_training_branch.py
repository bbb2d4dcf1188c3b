# kept out (round 23): strict mode, `return F.dropout(out, p=self.dropout.p, training=True)` in a
# `self.training` branch the eval-mode spec never takes: `rejected_static torch_compute_op` with the checks on,
# ok with them off and in both permissive cells. Kept out, not fixed: strict's static rule reads the source,
# not the path taken; telling a dead branch from a live one needs the mode the judge runs in, and a branch
# on `self.training` is live under any training spec. The honest strict form writes that dropout in
# Triton (`good/bn_dropout_eval_training_branch_fused_linear_bn_relu`) or drops the branch.
# good: KernelBench Linear + BatchNorm1d + ReLU + Dropout judged in eval mode, all Triton in one launch:
# GEMM + bias, the running-statistics norm, ReLU; the forward branches on `self.training` as LLMs write
# it, dropout applied only when training (here never: eval mode, dropout is the identity), `self.dropout.p`
# read from the module; `M, K = x.shape` read into Python ints for the grid
# spec: kb_bn_dropout_eval
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def linear_bn_relu_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    g_ptr,
    beta_ptr,
    rm_ptr,
    rv_ptr,
    out_ptr,
    M,
    N,
    K,
    eps,
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
    mean = tl.load(rm_ptr + rn, mask=nmask, other=0.0)
    var = tl.load(rv_ptr + rn, mask=nmask, other=1.0)
    g = tl.load(g_ptr + rn, mask=nmask, other=1.0)
    beta = tl.load(beta_ptr + rn, mask=nmask, other=0.0)
    y = (acc - mean[None, :]) / tl.sqrt(var[None, :] + eps) * g[None, :] + beta[None, :]
    y = tl.maximum(y, 0.0)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], y, mask=(rm[:, None] < M) & nmask[None, :])


@triton.jit
def dropout_kernel(x_ptr, out_ptr, total, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    keep = tl.rand(seed, offs) > p
    tl.store(out_ptr + offs, tl.where(keep, x / (1.0 - p), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features, p):
        super().__init__()
        self.fc = nn.Linear(features, features)
        self.bn = nn.BatchNorm1d(features)
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        M, K = int(M), int(K)
        N = self.fc.weight.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
        linear_bn_relu_kernel[grid](
            x,
            self.fc.weight,
            self.fc.bias,
            self.bn.weight,
            self.bn.bias,
            self.bn.running_mean,
            self.bn.running_var,
            out,
            M,
            N,
            K,
            self.bn.eps,
            BM=16,
            BN=16,
            BK=16,
        )
        if self.training and self.dropout.p > 0:
            return F.dropout(out, p=self.dropout.p, training=True)
            total = out.numel()
            dropout_kernel[(triton.cdiv(total, 256),)](out, dropped, total, self.dropout.p, 1234, BLOCK=256)
            return dropped
        return out
