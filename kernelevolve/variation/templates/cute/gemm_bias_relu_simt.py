# kernelevolve-template: name=cute_gemm_bias_relu_simt family=gemm_bias_relu backend=cute
# mypy: ignore-errors
"""relu(x @ W^T + b) (nn.Linear then ReLU) as a tiled SIMT GEMM in CuTe DSL, fp32 accumulation, any float dtype.

Each thread block owns a TILE_M x TILE_N tile of the output. K is walked in TILE_K slices: x and W are
K-major in memory, so every slice is read with vector loads along K into registers, converted to fp32 and
stored transposed (M-/N-major, padded) into one of two shared-memory buffers; the loads of slice k+1 are
in flight while slice k is multiplied. A tiled MMA of fp32 FMA atoms (16 x THREADS/16 threads, four
consecutive rows/columns per thread so shared reads are 128-bit) accumulates in registers, and the
epilogue adds the bias, applies ReLU and stores with bounds checks.

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
TILE_K = 8  # tune: 8, 16, 32
THREADS = 256  # tune: 128, 256
SMEM_PAD = 4  # tune: 0, 4

_CUTE_DTYPES = {
    torch.float32: cutlass.Float32,
    torch.float16: cutlass.Float16,
    torch.bfloat16: cutlass.BFloat16,
}


def _load_vector(k: int, width_bits: int, align_bytes: int) -> int:
    """Elements per global load along K: up to 128 bits, dividing K and TILE_K, within the alignment, and
    such that the threads cover whole rows of both tiles."""
    vec = max(1, min(16, align_bytes) * 8 // width_bits)
    while vec > 1 and (k % vec or TILE_K % vec or min(TILE_M, TILE_N) % (THREADS * vec // TILE_K)):
        vec //= 2
    return vec


def _gmem_tiled_copy(dtype, vec: int):
    """Threads laid K-fastest over a (rows, TILE_K) slice, vec contiguous K elements each."""
    per_row = TILE_K // vec
    threads = cute.make_layout((THREADS // per_row, per_row), stride=(per_row, 1))
    values = cute.make_layout((1, vec))
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype, num_bits_per_copy=vec * dtype.width)
    return cute.make_tiled_copy_tv(atom, threads, values)


@cute.jit
def _load_slice(
    tiled_copy: cute.TiledCopy, src: cute.Tensor, coords: cute.Tensor, extent: cute.Shape, regs: cute.Tensor
):
    """Predicated global->register copy of one K slice; out-of-bounds vectors read as zero."""
    regs.fill(0)
    for m in cutlass.range_constexpr(cute.size(regs, mode=[1])):
        for k in cutlass.range_constexpr(cute.size(regs, mode=[2])):
            if cute.elem_less(coords[(0, m, k)], extent):
                cute.copy(tiled_copy, src[(None, m, k)], regs[(None, m, k)])


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
    k_tiles = cute.size(gA, mode=[2])

    smem = cutlass.memory.SmemAllocator()
    sA = smem.allocate_tensor(cutlass.Float32, sA_layout, byte_alignment=16)  # (TILE_M, TILE_K, 2)
    sB = smem.allocate_tensor(cutlass.Float32, sB_layout, byte_alignment=16)  # (TILE_N, TILE_K, 2)

    thr_a = copy_a.get_slice(tidx)
    thr_b = copy_b.get_slice(tidx)
    tAgA, tAcA, tAsA = thr_a.partition_S(gA), thr_a.partition_S(cA), thr_a.partition_D(sA)
    tBgB, tBcB, tBsB = thr_b.partition_S(gB), thr_b.partition_S(cB), thr_b.partition_D(sB)
    rA = cute.make_fragment_like(tAgA[(None, None, None, 0)])
    rB = cute.make_fragment_like(tBgB[(None, None, None, 0)])
    rA32 = cute.make_rmem_tensor_like(rA, cutlass.Float32)
    rB32 = cute.make_rmem_tensor_like(rB, cutlass.Float32)

    thr_mma = tiled_mma.get_slice(tidx)
    tCsA = thr_mma.partition_A(sA)  # (MMA, MMA_M, MMA_K, 2)
    tCsB = thr_mma.partition_B(sB)
    tCgC = thr_mma.partition_C(gC)
    tCcC = thr_mma.partition_C(cC)
    tCrA = tiled_mma.make_fragment_A(tCsA[(None, None, None, 0)])
    tCrB = tiled_mma.make_fragment_B(tCsB[(None, None, None, 0)])
    acc = tiled_mma.make_fragment_C(tCgC)
    acc.fill(0.0)

    _load_slice(copy_a, tAgA[(None, None, None, 0)], tAcA[(None, None, None, 0)], mA.shape, rA)
    _load_slice(copy_b, tBgB[(None, None, None, 0)], tBcB[(None, None, None, 0)], mB.shape, rB)
    rA32.store(rA.load().to(cutlass.Float32))
    rB32.store(rB.load().to(cutlass.Float32))
    cute.autovec_copy(rA32, tAsA[(None, None, None, 0)])
    cute.autovec_copy(rB32, tBsB[(None, None, None, 0)])
    cute.arch.sync_threads()

    for kt in cutlass.range(k_tiles):
        stage = kt % 2
        has_next = kt + 1 < k_tiles
        if has_next:  # issue the next slice's global loads before the math on this one
            _load_slice(
                copy_a, tAgA[(None, None, None, kt + 1)], tAcA[(None, None, None, kt + 1)], mA.shape, rA
            )
            _load_slice(
                copy_b, tBgB[(None, None, None, kt + 1)], tBcB[(None, None, None, kt + 1)], mB.shape, rB
            )
        for kk in cutlass.range_constexpr(TILE_K):
            cute.autovec_copy(tCsA[(None, None, kk, stage)], tCrA[(None, None, kk)])
            cute.autovec_copy(tCsB[(None, None, kk, stage)], tCrB[(None, None, kk)])
            cute.gemm(tiled_mma, acc, tCrA[(None, None, kk)], tCrB[(None, None, kk)], acc)
        if has_next:
            rA32.store(rA.load().to(cutlass.Float32))
            rB32.store(rB.load().to(cutlass.Float32))
            cute.autovec_copy(rA32, tAsA[(None, None, None, 1 - stage)])
            cute.autovec_copy(rB32, tBsB[(None, None, None, 1 - stage)])
        cute.arch.sync_threads()

    for i in cutlass.range(cute.size(acc), unroll_full=True):
        if cute.elem_less(tCcC[i], mC.shape):
            _, n = tCcC[i]
            value = acc[i] + mBias[n].to(cutlass.Float32)
            tCgC[i] = cute.arch.fmax(value, cutlass.Float32(0.0)).to(mC.element_type)


@cute.jit
def gemm_launch(mA: cute.Tensor, mB: cute.Tensor, mBias: cute.Tensor, mC: cute.Tensor, stream: cuda.CUstream):
    m, k = mA.shape
    n = mB.shape[0]
    align = min(mA.iterator.alignment, mB.iterator.alignment)
    copy_a = _gmem_tiled_copy(mA.element_type, _load_vector(k, mA.element_type.width, align))
    copy_b = _gmem_tiled_copy(mB.element_type, _load_vector(k, mB.element_type.width, align))
    sA_layout = cute.make_layout(
        (TILE_M, TILE_K, 2), stride=(1, TILE_M + SMEM_PAD, TILE_K * (TILE_M + SMEM_PAD))
    )
    sB_layout = cute.make_layout(
        (TILE_N, TILE_K, 2), stride=(1, TILE_N + SMEM_PAD, TILE_K * (TILE_N + SMEM_PAD))
    )
    # Threads 16 wide along N; each owns 4 consecutive rows and columns per 64 x (4 * THREADS / 16) block.
    atoms = cute.make_layout((THREADS // 16, 16, 1), stride=(16, 1, 0))
    permute_m = cute.make_layout((THREADS // 16, 4), stride=(4, 1))
    permute_n = cute.make_layout((16, 4), stride=(4, 1))
    tiled_mma = cute.make_tiled_mma(
        cute.nvgpu.MmaUniversalOp(cutlass.Float32), atoms, permutation_mnk=(permute_m, permute_n, None)
    )
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
