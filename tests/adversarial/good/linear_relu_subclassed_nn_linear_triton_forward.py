# good: Linear + ReLU as an nn.Linear subclass whose forward launches a Triton GEMM with the bias and ReLU
# fused (a drop-in layer: PyTorch's parameter names, reset_parameters and extra_repr kept), the weight
# read through its transposed strides, the grid a lambda over meta
# spec: linear_relu
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_relu_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    M,
    N,
    K,
    sxm,
    sxk,
    swk,
    swn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(
            x_ptr + rm[:, None] * sxm + rk[None, :] * sxk,
            mask=(rm[:, None] < M) & (rk[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            w_ptr + rk[:, None] * swk + rn[None, :] * swn,
            mask=(rk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc += tl.dot(a, b, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(
        y_ptr + rm[:, None] * N + rn[None, :],
        tl.maximum(acc, 0.0),
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


class TritonLinearReLU(nn.Linear):
    def forward(self, x):
        M, K = x.shape
        wt = self.weight.t()
        y = torch.empty((M, self.out_features), device=x.device, dtype=x.dtype)
        grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(self.out_features, meta["BLOCK_N"]))  # noqa: E731
        linear_relu_kernel[grid](
            x,
            wt,
            self.bias,
            y,
            M,
            self.out_features,
            K,
            x.stride(0),
            x.stride(1),
            wt.stride(0),
            wt.stride(1),
            BLOCK_M=16,
            BLOCK_N=16,
            BLOCK_K=16,
        )
        return y


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.linear = TritonLinearReLU(*args)

    def forward(self, x):
        return self.linear(x)
