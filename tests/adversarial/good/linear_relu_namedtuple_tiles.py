# good: linear + relu where a lru_cache'd helper (shape ints only) picks a typing.NamedTuple of tile sizes
# and a helper returns (grid, tiles); the launch takes the tiles as keyword constexprs via ._asdict()
# spec: linear_relu
import functools
from typing import NamedTuple, Tuple  # noqa: UP035 (the older spelling, on purpose)

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_relu_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, M, N, K: tl.constexpr, sxm, swn, som,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        a = tl.load(
            x_ptr + rm[:, None] * sxm + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0
        )
        b = tl.load(
            w_ptr + rn[None, :] * swn + kk[:, None], mask=(rn[None, :] < N) & (kk[:, None] < K), other=0.0
        )
        acc += tl.dot(a, b, input_precision="ieee")
    acc = tl.maximum(acc + tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :], 0.0)
    tl.store(out_ptr + rm[:, None] * som + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class Tiles(NamedTuple):
    BM: int
    BN: int
    BK: int


@functools.lru_cache(maxsize=32)
def pick_tiles(M: int, N: int, K: int) -> Tiles:
    big = min(M, N) >= 128
    return Tiles(BM=64 if big else 16, BN=64 if big else 16, BK=32 if K >= 32 else 16)


def launch_plan(M: int, N: int, K: int) -> Tuple[Tuple[int, int], Tiles]:  # noqa: UP006
    tiles = pick_tiles(M, N, K)
    return (triton.cdiv(M, tiles.BM), triton.cdiv(N, tiles.BN)), tiles


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # parameters only: same init as the reference

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        weight = self.linear.weight.contiguous()
        M, K = x.shape
        N = weight.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        grid, tiles = launch_plan(M, N, K)
        linear_relu_kernel[grid](
            x, weight, self.linear.bias, out, M, N, K, x.stride(0), weight.stride(0), out.stride(0),
            **tiles._asdict(),
        )  # fmt: skip
        return out
