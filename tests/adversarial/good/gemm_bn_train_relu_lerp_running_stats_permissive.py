# good: KernelBench Gemm + BatchNorm1d (training mode) + ReLU, permissive: the GEMM by the module's own
# nn.Linear, the batch statistics (mean, biased and unbiased variance) by a Triton column kernel, the
# normalise + affine + ReLU by a second kernel, and the running statistics moved the way a PyTorch user
# writes an EMA, `running_mean.lerp_(mean, momentum)` under torch.no_grad(), num_batches_tracked stepped
# spec: kb_gemm_batchnorm_relu
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def col_stats(y_ptr, mean_ptr, var_ptr, uvar_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = tl.arange(0, BLOCK_M)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    y = tl.load(y_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
    mean = tl.sum(y, axis=0) / M
    d = tl.where(mask, y - mean[None, :], 0.0)
    ss = tl.sum(d * d, axis=0)
    tl.store(mean_ptr + cols, mean, mask=cols < N)
    tl.store(var_ptr + cols, ss / M, mask=cols < N)
    tl.store(uvar_ptr + cols, ss / (M - 1), mask=cols < N)


@triton.jit
def bn_relu(y_ptr, mean_ptr, var_ptr, g_ptr, b_ptr, out_ptr, M, N, eps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < M * N
    c = offs % N
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    mean = tl.load(mean_ptr + c, mask=mask, other=0.0)
    var = tl.load(var_ptr + c, mask=mask, other=1.0)
    z = (y - mean) / tl.sqrt(var + eps) * tl.load(g_ptr + c, mask=mask) + tl.load(b_ptr + c, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(z, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features)

    def forward(self, x):
        y = self.gemm(x).contiguous()
        m, n = y.shape
        mean, var, uvar = (y.new_empty(n) for _ in range(3))
        col_stats[(triton.cdiv(n, 16),)](
            y, mean, var, uvar, m, n, BLOCK_M=triton.next_power_of_2(m), BLOCK_N=16
        )
        bn = self.bn
        if bn.training:
            with torch.no_grad():
                bn.running_mean.lerp_(mean, bn.momentum)
                bn.running_var.lerp_(uvar, bn.momentum)
                bn.num_batches_tracked += 1
        else:
            mean, var = bn.running_mean, bn.running_var
        out = torch.empty_like(y)
        bn_relu[(triton.cdiv(m * n, 128),)](y, mean, var, bn.weight, bn.bias, out, m, n, bn.eps, BLOCK=128)
        return out
