# good: KernelBench level-2 Linear + BatchNorm1d + ReLU, LLM style: `self.gemm` kept and called, only the
# norm + ReLU tail in Triton (permissive); a `self.training` branch (batch statistics, running statistics
# moved in place by the kernel, num_batches_tracked counted on the host) and an eval branch (running
# statistics), eps / momentum read from the module, grid from `x.shape` read into Python ints
# spec: kb_gemm_batchnorm_relu
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bn_relu_train_kernel(
    x_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, out_ptr, N, C, eps, momentum, BLOCK_N: tl.constexpr
):
    c = tl.program_id(0)
    rows = tl.arange(0, BLOCK_N)
    mask = rows < N
    x = tl.load(x_ptr + rows * C + c, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / N
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / N
    y = diff / tl.sqrt(var + eps) * tl.load(w_ptr + c) + tl.load(b_ptr + c)
    tl.store(out_ptr + rows * C + c, tl.maximum(y, 0.0), mask=mask)
    rm = tl.load(rm_ptr + c)
    rv = tl.load(rv_ptr + c)
    tl.store(rm_ptr + c, (1.0 - momentum) * rm + momentum * mean)
    tl.store(rv_ptr + c, (1.0 - momentum) * rv + momentum * var * N / (N - 1))


@triton.jit
def bn_relu_eval_kernel(x_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, out_ptr, total, C, eps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    c = offs % C
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    rm = tl.load(rm_ptr + c, mask=mask, other=0.0)
    rv = tl.load(rv_ptr + c, mask=mask, other=1.0)
    y = (x - rm) / tl.sqrt(rv + eps) * tl.load(w_ptr + c, mask=mask) + tl.load(b_ptr + c, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(y, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features)

    def forward(self, x):
        x = self.gemm(x).contiguous()
        n, c = x.shape
        n, c = int(n), int(c)
        out = torch.empty_like(x)
        bn = self.bn
        if self.training:
            bn.num_batches_tracked += 1
            bn_relu_train_kernel[(c,)](
                x,
                bn.weight,
                bn.bias,
                bn.running_mean,
                bn.running_var,
                out,
                n,
                c,
                bn.eps,
                bn.momentum,
                BLOCK_N=triton.next_power_of_2(n),
            )
        else:
            total = n * c
            bn_relu_eval_kernel[(triton.cdiv(total, 256),)](
                x, bn.weight, bn.bias, bn.running_mean, bn.running_var, out, total, c, bn.eps, BLOCK=256
            )
        return out
