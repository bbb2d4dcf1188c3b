# good: KernelBench level-3 MLP: the reference's `nn.Sequential` kept for its parameters (same init
# order), forward walks `self.network` and launches one Triton GEMM + bias (+ ReLU by a constexpr flag) per
# nn.Linear, skipping the nn.ReLU modules because the previous launch fused them; `isinstance` dispatch,
# `triton.next_power_of_2` tiles, docstrings and typing
# spec: kb_mlp
from typing import List

# ruff: noqa: UP006, UP035, UP045, SIM222 -- typing and guards as LLMs write them
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_act_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    M,
    N,
    K,
    sxm,
    sxk,
    swn,
    swk,
    sym,
    syn,
    APPLY_RELU: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(
            x_ptr + rm[:, None] * sxm + rk[None, :] * sxk,
            mask=(rm[:, None] < M) & (rk[None, :] < K),
            other=0.0,
        )
        w = tl.load(
            w_ptr + rn[None, :] * swn + rk[:, None] * swk,
            mask=(rn[None, :] < N) & (rk[:, None] < K),
            other=0.0,
        )
        acc += tl.dot(a, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    if APPLY_RELU:
        acc = tl.maximum(acc, 0.0)
    tl.store(y_ptr + rm[:, None] * sym + rn[None, :] * syn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def triton_linear(x: torch.Tensor, layer: nn.Linear, relu: bool) -> torch.Tensor:
    """y = relu?(x @ layer.weight.T + layer.bias), one launch."""
    x = x.contiguous()
    w = layer.weight
    M, K = x.shape
    N = w.shape[0]
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    BM = max(16, min(32, triton.next_power_of_2(M)))
    BN = max(16, min(32, triton.next_power_of_2(N)))
    BK = 16
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    linear_act_kernel[grid](
        x,
        w,
        layer.bias,
        y,
        M,
        N,
        K,
        x.stride(0),
        x.stride(1),
        w.stride(0),
        w.stride(1),
        y.stride(0),
        y.stride(1),
        APPLY_RELU=relu,
        BLOCK_M=BM,
        BLOCK_N=BN,
        BLOCK_K=BK,
    )
    return y


class ModelNew(nn.Module):
    def __init__(self, input_size: int, layer_sizes: List[int], output_size: int):
        super().__init__()
        layers: List[nn.Module] = []
        current = input_size
        for size in layer_sizes:
            layers.append(nn.Linear(current, size))
            layers.append(nn.ReLU())
            current = size
        layers.append(nn.Linear(current, output_size))
        self.network = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        modules = list(self.network)
        i = 0
        while i < len(modules):
            layer = modules[i]
            if isinstance(layer, nn.Linear):
                fuse = i + 1 < len(modules) and isinstance(modules[i + 1], nn.ReLU)
                x = triton_linear(x, layer, relu=fuse)
                i += 2 if fuse else 1
            else:
                raise RuntimeError(f"unexpected layer {type(layer).__name__}")
        return x
