# good: KernelBench level-2 GEMM + bias + scale + clamp + GELU written the way an LLM writes it: `import
# math`, typing imports, a class-level constant, the reference's `nn.Linear` kept and its `.weight` /
# `.bias` handed to one fused Triton kernel through `x.stride()` pointer math, `@torch.no_grad()` on a
# documented helper, `assert x.is_cuda or True`, `contiguous()` on every input, an early return on empty
# input, `triton.next_power_of_2` for the tile sizes and `tl.static_range` over K tiles
# spec: kb_gemm_scale_clamp_gelu
import math
from typing import Optional, Tuple

# ruff: noqa: UP006, UP035, UP045, SIM222 -- typing and guards as LLMs write them
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fused_linear_epilogue_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    b2_ptr,
    out_ptr,
    M,
    N,
    K,
    stride_xm,
    stride_xk,
    stride_wn,
    stride_wk,
    stride_om,
    stride_on,
    scale,
    clamp_min,
    clamp_max,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    K_TILES: tl.constexpr,
):
    pid_m = tl.program_id(axis=0)
    pid_n = tl.program_id(axis=1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kt in tl.static_range(K_TILES):
        k = kt * BLOCK_K + offs_k
        a = tl.load(
            x_ptr + offs_m[:, None] * stride_xm + k[None, :] * stride_xk,
            mask=(offs_m[:, None] < M) & (k[None, :] < K),
            other=0.0,
        )
        # W is (N, K): read it as (K, N) through its strides
        b = tl.load(
            w_ptr + k[:, None] * stride_wk + offs_n[None, :] * stride_wn,
            mask=(k[:, None] < K) & (offs_n[None, :] < N),
            other=0.0,
        )
        acc += tl.dot(a, b, input_precision="ieee")
    bias = tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0)
    bias2 = tl.load(b2_ptr + offs_n, mask=offs_n < N, other=0.0)
    y = (acc + bias[None, :] + bias2[None, :]) * scale
    y = tl.minimum(tl.maximum(y, clamp_min), clamp_max)
    # exact GELU: 0.5 * y * (1 + erf(y / sqrt(2)))
    y = 0.5 * y * (1.0 + tl.math.erf(y * 0.7071067811865476))
    out_ptrs = out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on
    tl.store(out_ptrs, y, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _tile_sizes(m: int, n: int, k: int) -> Tuple[int, int, int]:
    """Pick power-of-two tiles no smaller than 16 (tl.dot's minimum) and no larger than 64."""
    block_m = max(16, min(64, triton.next_power_of_2(m)))
    block_n = max(16, min(64, triton.next_power_of_2(n)))
    block_k = max(16, min(32, triton.next_power_of_2(k)))
    return block_m, block_n, block_k


@torch.no_grad()
def fused_linear_scale_clamp_gelu(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    extra_bias: torch.Tensor,
    scale: float,
    clamp_min: float,
    clamp_max: float,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Compute gelu(clamp((x @ W^T + b + b2) * scale, lo, hi)) in a single kernel launch.

    Args:
        x: (M, K) input.
        weight: (N, K) weight of the nn.Linear.
        bias, extra_bias: (N,) biases.
    """
    assert x.is_cuda or True  # runs on whatever device the inputs are on
    assert x.dim() == 2 and weight.dim() == 2, "expected 2-D input and weight"
    x = x.contiguous()
    weight = weight.contiguous()
    bias = bias.contiguous()
    extra_bias = extra_bias.contiguous()
    M, K = x.shape
    N = weight.shape[0]
    if out is None:
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    if x.numel() == 0:
        return out
    BLOCK_M, BLOCK_N, BLOCK_K = _tile_sizes(M, N, K)
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    fused_linear_epilogue_kernel[grid](
        x,
        weight,
        bias,
        extra_bias,
        out,
        M,
        N,
        K,
        x.stride(0),
        x.stride(1),
        weight.stride(0),
        weight.stride(1),
        out.stride(0),
        out.stride(1),
        float(scale),
        float(clamp_min),
        float(clamp_max),
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        BLOCK_K=BLOCK_K,
        K_TILES=math.ceil(K / BLOCK_K),
    )
    return out


class ModelNew(nn.Module):
    """Optimised Model: Linear + bias + scale + clamp + GELU fused into one Triton kernel."""

    SQRT_HALF: float = 1.0 / math.sqrt(2.0)

    def __init__(self, in_features: int, out_features: int, scale: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)
        self.scale = scale
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return fused_linear_scale_clamp_gelu(
            x, self.gemm.weight, self.gemm.bias, self.bias, self.scale, self.clamp_min, self.clamp_max
        )
