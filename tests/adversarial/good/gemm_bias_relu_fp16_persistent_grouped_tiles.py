# good: fp16 linear + bias + ReLU as a persistent GEMM: a fixed number of programs walk the output tiles
# in grouped (GROUP_M) order with a grid-stride loop, each tile a K loop of fp16 tl.dot into an fp32
# accumulator, the bias and ReLU applied in fp32 and the tile stored as fp16; the nn.Linear's weight read
# through its transposed strides
# spec: shipped:gemm_bias_relu
import torch
import torch.nn as nn
import triton
import triton.language as tl

NUM_PROGRAMS = 4


@triton.jit
def persistent_linear_relu_kernel(
    a_ptr,
    w_ptr,
    bias_ptr,
    c_ptr,
    M,
    N,
    K,
    s_am,
    s_ak,
    s_wk,
    s_wn,
    s_cm,
    s_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, tl.num_programs(0)):
        group = tile // per_group
        first_m = group * GROUP_M
        group_rows = tl.minimum(tiles_m - first_m, GROUP_M)
        pid_m = first_m + (tile % per_group) % group_rows
        pid_n = (tile % per_group) // group_rows
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in tl.range(0, K, BLOCK_K):
            rk = k0 + tl.arange(0, BLOCK_K)
            a = tl.load(
                a_ptr + rm[:, None] * s_am + rk[None, :] * s_ak,
                mask=(rm[:, None] < M) & (rk[None, :] < K),
                other=0.0,
            )
            w = tl.load(
                w_ptr + rk[:, None] * s_wk + rn[None, :] * s_wn,
                mask=(rk[:, None] < K) & (rn[None, :] < N),
                other=0.0,
            )
            acc = tl.dot(a, w, acc, out_dtype=tl.float32)
        bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)
        out = tl.maximum(acc + bias[None, :], 0.0)
        tl.store(
            c_ptr + rm[:, None] * s_cm + rn[None, :] * s_cn,
            out.to(c_ptr.dtype.element_ty),
            mask=(rm[:, None] < M) & (rn[None, :] < N),
        )


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = x.reshape(-1, x.shape[-1])
        w_t = self.linear.weight.t()  # (K, N) view, no copy
        M, K = a.shape
        N = w_t.shape[1]
        c = torch.empty((M, N), dtype=x.dtype, device=x.device)
        tiles = triton.cdiv(M, 16) * triton.cdiv(N, 16)
        persistent_linear_relu_kernel[(min(tiles, NUM_PROGRAMS),)](
            a,
            w_t,
            self.linear.bias,
            c,
            M,
            N,
            K,
            a.stride(0),
            a.stride(1),
            w_t.stride(0),
            w_t.stride(1),
            c.stride(0),
            c.stride(1),
            BLOCK_M=16,
            BLOCK_N=16,
            BLOCK_K=16,
            GROUP_M=2,
        )
        return c.view(*x.shape[:-1], N)
