# kernelevolve-template: name=gemm_bias_relu_tma family=gemm_bias_relu backend=triton
"""relu(x @ W^T + b) for nn.Linear + ReLU with TMA tensor descriptors and a persistent grid.

Operand tiles move through host-built tensor descriptors (TMA bulk copies on Hopper: no address
arithmetic, out-of-range rows read as zeros, stores clipped). With PERSISTENT a grid of one
program per SM walks the output tiles in grouped order (GROUP_M) so operands are reused from L2
and tile set-up overlaps the previous tile's epilogue. Bias add and ReLU run on the fp32
accumulator. TMA needs 16-byte aligned rows; other shapes use a pointer-based tiled kernel.
Building descriptors costs host time per call (~70 us measured on an H200 host, hidden when the
GPU is busy), so small problems can favour the plain gemm_bias_relu template.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

BLOCK_M = 128  # tune: 64, 128, 256
BLOCK_N = 128  # tune: 64, 128, 256
BLOCK_K = 64  # tune: 32, 64, 128
# Row-tiles per group in the grouped ordering; 1 is plain row-major order.
GROUP_M = 8  # tune: 1, 4, 8, 16
NUM_WARPS = 8  # tune: 4, 8
NUM_STAGES = 4  # tune: 2, 3, 4, 5
PERSISTENT = True  # tune: True, False
FP32_PRECISION = "tf32x3"  # tune: "tf32x3", "ieee", "tf32"


@triton.jit
def _tile_coords(tile, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    tiles_per_group = GROUP_M * tiles_n
    first_m = (tile // tiles_per_group) * GROUP_M
    group_rows = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (tile % tiles_per_group) % group_rows
    pid_n = (tile % tiles_per_group) // group_rows
    return pid_m, pid_n


@triton.jit
def _linear_relu_tma_kernel(
    a_desc,
    w_desc,
    c_desc,
    bias_ptr,
    M,
    N,
    K,
    num_programs,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    PRECISION: tl.constexpr,
):
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, num_programs, flatten=True):
        pid_m, pid_n = _tile_coords(tile, tiles_m, tiles_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kk in range(k_tiles):
            a = a_desc.load([off_m, kk * BLOCK_K])
            w = w_desc.load([off_n, kk * BLOCK_K])
            acc = tl.dot(a, w.T, acc, input_precision=PRECISION)
        if HAS_BIAS:
            cols = off_n + tl.arange(0, BLOCK_N)
            acc += tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
        acc = tl.maximum(acc, 0.0)
        c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


@triton.jit
def _linear_relu_ptr_kernel(
    a_ptr,
    w_ptr,
    bias_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_wn,
    stride_wk,
    stride_cm,
    stride_cn,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    PRECISION: tl.constexpr,
):
    pid_m, pid_n = _tile_coords(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m[:, None] < M
    n_ok = offs_n[None, :] < N
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    w_ptrs = w_ptr + offs_k[:, None] * stride_wk + offs_n[None, :] * stride_wn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=m_ok & (offs_k[None, :] < k_left), other=0.0)
        w = tl.load(w_ptrs, mask=n_ok & (offs_k[:, None] < k_left), other=0.0)
        acc = tl.dot(a, w, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        w_ptrs += BLOCK_K * stride_wk
    if HAS_BIAS:
        acc += tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
    acc = tl.maximum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=m_ok & n_ok)


def _tma_compatible(*tensors: torch.Tensor) -> bool:
    for t in tensors:
        if t.stride(-1) != 1 or t.data_ptr() % 16:
            return False
        if any((s * t.element_size()) % 16 for s in t.stride()[:-1]):
            return False
    return True


def _program_count(device: torch.device, tiles: int) -> int:
    if PERSISTENT and device.type == "cuda":
        return min(tiles, torch.cuda.get_device_properties(device).multi_processor_count)
    return tiles


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight, bias = self.linear.weight, self.linear.bias
        n, k = weight.shape
        a = x.reshape(-1, k)
        m = a.shape[0]
        c = torch.empty((m, n), dtype=x.dtype, device=x.device)
        if m == 0 or n == 0:
            return c.reshape(*x.shape[:-1], n)
        has_bias = bias is not None
        bias_arg = bias if has_bias else weight
        tiles = triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N)
        if _tma_compatible(a, weight, c):
            a_desc = TensorDescriptor.from_tensor(a, [BLOCK_M, BLOCK_K])
            w_desc = TensorDescriptor.from_tensor(weight, [BLOCK_N, BLOCK_K])
            c_desc = TensorDescriptor.from_tensor(c, [BLOCK_M, BLOCK_N])
            programs = _program_count(x.device, tiles)
            _linear_relu_tma_kernel[(programs,)](
                a_desc,
                w_desc,
                c_desc,
                bias_arg,
                m,
                n,
                k,
                programs,
                HAS_BIAS=has_bias,
                BLOCK_M=BLOCK_M,
                BLOCK_N=BLOCK_N,
                BLOCK_K=BLOCK_K,
                GROUP_M=GROUP_M,
                PRECISION=FP32_PRECISION,
                num_warps=NUM_WARPS,
                num_stages=NUM_STAGES,
            )
        else:
            _linear_relu_ptr_kernel[(tiles,)](
                a,
                weight,
                bias_arg,
                c,
                m,
                n,
                k,
                a.stride(0),
                a.stride(1),
                weight.stride(0),
                weight.stride(1),
                c.stride(0),
                c.stride(1),
                HAS_BIAS=has_bias,
                BLOCK_M=BLOCK_M,
                BLOCK_N=BLOCK_N,
                BLOCK_K=BLOCK_K,
                GROUP_M=GROUP_M,
                PRECISION=FP32_PRECISION,
                num_warps=NUM_WARPS,
                num_stages=NUM_STAGES,
            )
        return c.reshape(*x.shape[:-1], n)
