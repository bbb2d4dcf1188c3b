# good: fp16 linear + bias + relu whose ModelNew declares its own nn.Parameter weight and bias (empty) and
# fills them with load_state_dict from a freshly built nn.Linear (the checkpoint-loading idiom); the weight
# passed as its .t() view with swapped strides, a K loop of fp16 tl.dot with fp32 accumulation, the grid a
# lambda over META
# spec: shipped:gemm_bias_relu
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_relu_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    M,
    N,
    K,
    sxm,
    sxk,
    swk,
    swn,
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
            x_ptr + rm[:, None] * sxm + rk[None, :] * sxk,
            mask=(rm[:, None] < M) & (rk[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            w_ptr + rk[:, None] * swk + rn[None, :] * swn,
            mask=(rk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc += tl.dot(a, b)
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    acc = tl.maximum(acc, 0.0)
    tl.store(
        out_ptr + rm[:, None] * N + rn[None, :],
        acc.to(out_ptr.dtype.element_ty),
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.bias = nn.Parameter(torch.empty(out_features))
        self.load_state_dict(nn.Linear(in_features, out_features).state_dict())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, K = x.shape
        N = self.weight.shape[0]
        wt = self.weight.t()
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)

        def grid(META):
            return (triton.cdiv(M, META["BM"]), triton.cdiv(N, META["BN"]))

        linear_relu_kernel[grid](
            x,
            wt,
            self.bias,
            out,
            M,
            N,
            K,
            x.stride(0),
            x.stride(1),
            wt.stride(0),
            wt.stride(1),
            BM=16,
            BN=32,
            BK=32,
        )
        return out
