# kernelevolve-template: name=cute_gemm_bias_relu_mma family=gemm_bias_relu backend=cute
# mypy: ignore-errors
"""relu(x @ W^T + b) (nn.Linear then ReLU) on fp16/bf16 tensor cores in CuTe DSL (sm80 mma.sync, runs on sm90).

x (M, K) and W (N, K) are both K-major, which is what mma.sync wants for A and B. Each block computes a
TILE_M x TILE_N tile with four warps (2 x 2), each a grid of 16x8x16 MMA atoms accumulating in fp32.
K slices are staged in shared memory (K-major, rows padded by 16 bytes against bank conflicts) through a
STAGES-deep cp.async pipeline with 128-bit copies. The ragged end of K is moved to the first slice (the
tensors are offset by the residue) so that only that slice needs bounds checks, and it lands in shared
memory that was zeroed first. The epilogue adds the bias in fp32, applies ReLU and stores with bounds checks.

Convention for CuTe candidates: ModelNew.compile_kernels(*inputs) compiles (and caches) every kernel that
forward(*inputs) launches from shapes and dtypes alone (inputs may be meta tensors) and returns the compiled
functions; forward compiles on first use through the same cache and only launches afterwards.
"""

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
import torch.nn as nn
from cutlass.cute.runtime import from_dlpack, make_fake_compact_tensor, make_fake_stream

TILE_M = 128  # tune: 64, 128
TILE_N = 128  # tune: 64, 128
TILE_K = 32  # tune: 16, 32, 64
STAGES = 3  # tune: 2, 3, 4
SMEM_PAD = 8  # tune: 0, 8

THREADS = 128  # four warps as 2 x 2
SUPPORTED_DTYPES = ("float16", "bfloat16")  # other dtypes fail at compile time with a message saying so
_CUTE_DTYPES = {
    torch.float32: cutlass.Float32,
    torch.float16: cutlass.Float16,
    torch.bfloat16: cutlass.BFloat16,
}


def _copy_vector(k: int, width_bits: int, align_bytes: int) -> int:
    """Elements per gmem->smem copy: up to 128 bits, dividing K and TILE_K, covering whole tile rows."""
    vec = max(1, min(16, align_bytes) * 8 // width_bits)
    while vec > 1 and (k % vec or TILE_K % vec or min(TILE_M, TILE_N) % max(1, THREADS * vec // TILE_K)):
        vec //= 2
    return vec


def _smem_tiled_copy(dtype, vec: int):
    """Threads K-fastest over a (rows, TILE_K) slice; cp.async for 4-16 byte vectors, plain copies below."""
    per_row = TILE_K // vec
    threads = cute.make_layout((THREADS // per_row, per_row), stride=(per_row, 1))
    op = cute.nvgpu.cpasync.CopyG2SOp() if vec * dtype.width >= 32 else cute.nvgpu.CopyUniversalOp()
    atom = cute.make_copy_atom(op, dtype, num_bits_per_copy=vec * dtype.width)
    return cute.make_tiled_copy_tv(atom, threads, cute.make_layout((1, vec)))


@cute.jit
def _issue_slice(
    tiled_copy: cute.TiledCopy,
    src: cute.Tensor,
    dst: cute.Tensor,
    coords: cute.Tensor,
    extent: cute.Shape,
    checked: cutlass.Constexpr,
):
    """Copy one K slice into shared memory; `checked` slices skip vectors outside the matrix (the shifted
    ragged slice has negative K coordinates as well as ones past the end)."""
    for m in cutlass.range_constexpr(cute.size(src, mode=[1])):
        for k in cutlass.range_constexpr(cute.size(src, mode=[2])):
            if cutlass.const_expr(checked):
                if cute.elem_less(coords[(0, m, k)], extent):  # noqa: SIM102 - `and` needs Python bools; these are device values
                    if coords[(0, m, k)][1] >= 0:
                        cute.copy(tiled_copy, src[(None, m, k)], dst[(None, m, k)])
            else:
                cute.copy(tiled_copy, src[(None, m, k)], dst[(None, m, k)])


@cute.kernel
def gemm_kernel(
    mA: cute.Tensor,
    mB: cute.Tensor,
    mBias: cute.Tensor,
    mC: cute.Tensor,
    copy_a: cute.TiledCopy,
    copy_b: cute.TiledCopy,
    tiled_mma: cute.TiledMma,
    sA_layout: cute.Layout,
    sB_layout: cute.Layout,
):
    tidx, _, _ = cute.arch.thread_idx()
    bm, bn, _ = cute.arch.block_idx()
    tiler = (TILE_M, TILE_N, TILE_K)
    coord = (bm, bn, None)
    gA = cute.local_tile(mA, tiler=tiler, coord=coord, proj=(1, None, 1))  # (TILE_M, TILE_K, k_tiles)
    gB = cute.local_tile(mB, tiler=tiler, coord=coord, proj=(None, 1, 1))  # (TILE_N, TILE_K, k_tiles)
    gC = cute.local_tile(mC, tiler=tiler, coord=coord, proj=(1, 1, None))  # (TILE_M, TILE_N)
    cA = cute.local_tile(cute.make_identity_tensor(mA.shape), tiler=tiler, coord=coord, proj=(1, None, 1))
    cB = cute.local_tile(cute.make_identity_tensor(mB.shape), tiler=tiler, coord=coord, proj=(None, 1, 1))
    cC = cute.local_tile(cute.make_identity_tensor(mC.shape), tiler=tiler, coord=coord, proj=(1, 1, None))
    # Shift K so the first slice is the ragged one: residue <= 0 elements, negative coordinates are out of bounds.
    residue = mA.shape[1] - TILE_K * cute.size(gA, mode=[2])
    gA = cute.domain_offset((0, residue, 0), gA)
    gB = cute.domain_offset((0, residue, 0), gB)
    cA = cute.domain_offset((0, residue, 0), cA)
    cB = cute.domain_offset((0, residue, 0), cB)
    k_tiles = cute.size(gA, mode=[2])

    smem = cutlass.memory.SmemAllocator()
    sA = smem.allocate_tensor(mA.element_type, sA_layout, byte_alignment=128)  # (TILE_M, TILE_K, STAGES)
    sB = smem.allocate_tensor(mB.element_type, sB_layout, byte_alignment=128)  # (TILE_N, TILE_K, STAGES)

    thr_a = copy_a.get_slice(tidx)
    thr_b = copy_b.get_slice(tidx)
    tAgA, tAcA, tAsA = thr_a.partition_S(gA), thr_a.partition_S(cA), thr_a.partition_D(sA)
    tBgB, tBcB, tBsB = thr_b.partition_S(gB), thr_b.partition_S(cB), thr_b.partition_D(sB)
    tAsA.fill(0)  # each thread zeroes what it copies: skipped vectors of the ragged slice must read as zero
    tBsB.fill(0)
    cute.arch.sync_threads()

    thr_mma = tiled_mma.get_slice(tidx)
    tCsA = thr_mma.partition_A(sA)  # (MMA, MMA_M, MMA_K, STAGES)
    tCsB = thr_mma.partition_B(sB)
    tCgC = thr_mma.partition_C(gC)
    tCcC = thr_mma.partition_C(cC)
    tCrA = tiled_mma.make_fragment_A(tCsA[(None, None, None, 0)])
    tCrB = tiled_mma.make_fragment_B(tCsB[(None, None, None, 0)])
    acc = tiled_mma.make_fragment_C(tCgC)
    acc.fill(0.0)

    # Prologue: slices 0 .. STAGES-2 in flight; slice 0 is the checked (ragged) one.
    for s in cutlass.range_constexpr(STAGES - 1):
        if s < k_tiles:
            _issue_slice(
                copy_a,
                tAgA[(None, None, None, s)],
                tAsA[(None, None, None, s)],
                tAcA[(None, None, None, s)],
                mA.shape,
                s == 0,
            )
            _issue_slice(
                copy_b,
                tBgB[(None, None, None, s)],
                tBsB[(None, None, None, s)],
                tBcB[(None, None, None, s)],
                mB.shape,
                s == 0,
            )
        cute.arch.cp_async_commit_group()

    for kt in cutlass.range(k_tiles):
        cute.arch.cp_async_wait_group(STAGES - 2)  # slice kt has landed
        cute.arch.sync_threads()  # ... for every thread, and everyone is done with slice kt-1's stage
        nxt = kt + STAGES - 1
        if nxt < k_tiles:
            stage_n = nxt % STAGES
            _issue_slice(
                copy_a,
                tAgA[(None, None, None, nxt)],
                tAsA[(None, None, None, stage_n)],
                tAcA[(None, None, None, nxt)],
                mA.shape,
                False,
            )
            _issue_slice(
                copy_b,
                tBgB[(None, None, None, nxt)],
                tBsB[(None, None, None, stage_n)],
                tBcB[(None, None, None, nxt)],
                mB.shape,
                False,
            )
        cute.arch.cp_async_commit_group()
        stage = kt % STAGES
        for kk in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
            cute.autovec_copy(tCsA[(None, None, kk, stage)], tCrA[(None, None, kk)])
            cute.autovec_copy(tCsB[(None, None, kk, stage)], tCrB[(None, None, kk)])
            cute.gemm(tiled_mma, acc, tCrA[(None, None, kk)], tCrB[(None, None, kk)], acc)
    cute.arch.cp_async_wait_group(0)

    for i in cutlass.range(cute.size(acc), unroll_full=True):
        if cute.elem_less(tCcC[i], mC.shape):
            _, n = tCcC[i]
            value = acc[i] + mBias[n].to(cutlass.Float32)
            tCgC[i] = cute.arch.fmax(value, cutlass.Float32(0.0)).to(mC.element_type)


@cute.jit
def gemm_launch(mA: cute.Tensor, mB: cute.Tensor, mBias: cute.Tensor, mC: cute.Tensor, stream: cuda.CUstream):
    if cutlass.const_expr(mA.element_type not in (cutlass.Float16, cutlass.BFloat16)):
        raise TypeError(f"this tensor-core template needs float16 or bfloat16 inputs, got {mA.element_type}")
    m, k = mA.shape
    n = mB.shape[0]
    align = min(mA.iterator.alignment, mB.iterator.alignment)
    vec = _copy_vector(k, mA.element_type.width, align)
    copy_a = _smem_tiled_copy(mA.element_type, vec)
    copy_b = _smem_tiled_copy(mB.element_type, vec)
    row = TILE_K + SMEM_PAD
    smem_bytes = (TILE_M + TILE_N) * row * STAGES * mA.element_type.width // 8
    if cutlass.const_expr(smem_bytes > 227 * 1024):
        raise ValueError(
            f"{smem_bytes} bytes of shared memory per block exceed the 227 KiB limit; lower STAGES or tiles"
        )
    sA_layout = cute.make_layout((TILE_M, TILE_K, STAGES), stride=(row, 1, TILE_M * row))
    sB_layout = cute.make_layout((TILE_N, TILE_K, STAGES), stride=(row, 1, TILE_N * row))
    atom = cute.nvgpu.warp.MmaF16BF16Op(mA.element_type, cutlass.Float32, (16, 8, 16))
    tiled_mma = cute.make_tiled_mma(atom, (2, 2, 1))
    grid = ((m + TILE_M - 1) // TILE_M, (n + TILE_N - 1) // TILE_N, 1)
    gemm_kernel(mA, mB, mBias, mC, copy_a, copy_b, tiled_mma, sA_layout, sB_layout).launch(
        grid=grid, block=(THREADS, 1, 1), stream=stream
    )


def _alignment(*tensors: torch.Tensor) -> int:
    if all(t.data_ptr() % 16 == 0 for t in tensors):
        return 16
    return min(t.element_size() for t in tensors)


def _fake(t: torch.Tensor, align: int):
    order = tuple(reversed(range(t.dim())))
    return make_fake_compact_tensor(
        _CUTE_DTYPES[t.dtype], tuple(t.shape), stride_order=order, assumed_align=align
    )


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self._compiled = {}

    def _compile(self, x: torch.Tensor, y: torch.Tensor, align: int):
        weight, bias = self.linear.weight, self.linear.bias
        key = (tuple(x.shape), tuple(weight.shape), x.dtype, weight.dtype, align)
        if key not in self._compiled:
            fakes = [_fake(t, align) for t in (x, weight, bias, y)]
            self._compiled[key] = cute.compile(gemm_launch, *fakes, make_fake_stream())
        return self._compiled[key]

    def compile_kernels(self, x: torch.Tensor):
        x2 = x.reshape(-1, x.shape[-1])
        y = torch.empty((x2.shape[0], self.linear.out_features), dtype=x.dtype, device="meta")
        return {"gemm_bias_relu": self._compile(x2, y, _alignment(x2, self.linear.weight, self.linear.bias))}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        weight, bias = self.linear.weight.detach().contiguous(), self.linear.bias.detach()
        y = torch.empty((x2.shape[0], weight.shape[0]), dtype=x.dtype, device=x.device)
        align = _alignment(x2, weight, bias, y)
        kernel = self._compile(x2, y, align)
        stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
        kernel(*[from_dlpack(t, assumed_align=align) for t in (x2, weight, bias, y)], stream)
        return y.reshape(*x.shape[:-1], weight.shape[0])
