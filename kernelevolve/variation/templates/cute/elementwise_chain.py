# kernelevolve-template: name=cute_elementwise_chain family=elementwise_chain backend=cute
# mypy: ignore-errors
"""y = gelu(x * scale + bias) * sigmoid(x) (exact erf GELU; scale, bias per last-dim feature) in CuTe DSL.

One pass over x: the input is viewed as a flat vector and cut into VEC-element chunks that never cross a
row, so each thread moves whole 128-bit vectors (copy atom of VEC_BYTES) and looks its chunk's scale and
bias up by column. Math runs in fp32 and is cast once at the store.

Convention for CuTe candidates: ModelNew.compile_kernels(*inputs) compiles (and caches) every kernel that
forward(*inputs) launches from shapes and dtypes alone (inputs may be meta tensors) and returns the compiled
functions; forward compiles on first use through the same cache and only launches afterwards.
"""

import math

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
import torch.nn as nn
from cutlass.cute.runtime import from_dlpack, make_fake_compact_tensor, make_fake_stream

THREADS = 256  # tune: 128, 256, 512, 1024
VEC_BYTES = 16  # tune: 4, 8, 16
CHUNKS_PER_THREAD = 2  # tune: 1, 2, 4, 8

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_CUTE_DTYPES = {
    torch.float32: cutlass.Float32,
    torch.float16: cutlass.Float16,
    torch.bfloat16: cutlass.BFloat16,
}


def _chunk_elements(row: int, width_bits: int, align_bytes: int) -> int:
    """Largest power-of-two element count per chunk that fits the vector width, the alignment and a row."""
    vec = max(1, min(VEC_BYTES, align_bytes) * 8 // width_bits)
    while row % vec:
        vec //= 2
    return vec


@cute.kernel
def chain_kernel(
    gX: cute.Tensor, gS: cute.Tensor, gB: cute.Tensor, gY: cute.Tensor, chunks_per_row: cutlass.Constexpr
):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    n_chunks = cute.size(gX, mode=[1])
    vec = cute.size(gX, mode=[0])
    x_atom = cute.make_copy_atom(
        cute.nvgpu.CopyUniversalOp(), gX.element_type, num_bits_per_copy=vec * gX.element_type.width
    )
    p_atom = cute.make_copy_atom(
        cute.nvgpu.CopyUniversalOp(), gS.element_type, num_bits_per_copy=vec * gS.element_type.width
    )
    for u in cutlass.range_constexpr(CHUNKS_PER_THREAD):
        # Consecutive threads take consecutive chunks, so every warp access is coalesced.
        chunk = (bidx * CHUNKS_PER_THREAD + u) * THREADS + tidx
        if chunk < n_chunks:
            column = chunk % chunks_per_row
            rX = cute.make_fragment_like(gX[(None, chunk)])
            rS = cute.make_fragment_like(gS[(None, column)])
            rB = cute.make_fragment_like(gB[(None, column)])
            cute.copy(x_atom, gX[(None, chunk)], rX)
            cute.copy(p_atom, gS[(None, column)], rS)
            cute.copy(p_atom, gB[(None, column)], rB)
            x = rX.load().to(cutlass.Float32)
            z = x * rS.load().to(cutlass.Float32) + rB.load().to(cutlass.Float32)
            gelu = 0.5 * z * (1.0 + cute.math.erf(z * _INV_SQRT2))
            gate = 1.0 / (1.0 + cute.math.exp(-x))
            rY = cute.make_fragment_like(rX)
            rY.store((gelu * gate).to(gY.element_type))
            cute.copy(x_atom, rY, gY[(None, chunk)])


@cute.jit
def chain_launch(mX: cute.Tensor, mS: cute.Tensor, mB: cute.Tensor, mY: cute.Tensor, stream: cuda.CUstream):
    row = cute.size(mS)
    align = min(mX.iterator.alignment, mS.iterator.alignment, mB.iterator.alignment, mY.iterator.alignment)
    vec = _chunk_elements(row, mX.element_type.width, align)
    gX = cute.zipped_divide(mX, (vec,))  # ((vec), (n / vec))
    gY = cute.zipped_divide(mY, (vec,))
    gS = cute.zipped_divide(mS, (vec,))
    gB = cute.zipped_divide(mB, (vec,))
    per_block = THREADS * CHUNKS_PER_THREAD
    blocks = (cute.size(gX, mode=[1]) + per_block - 1) // per_block
    chain_kernel(gX, gS, gB, gY, row // vec).launch(grid=(blocks, 1, 1), block=(THREADS, 1, 1), stream=stream)


def _alignment(*tensors: torch.Tensor) -> int:
    if all(t.data_ptr() % 16 == 0 for t in tensors):
        return 16
    return min(t.element_size() for t in tensors)


def _fake_flat(t: torch.Tensor, align: int):
    return make_fake_compact_tensor(_CUTE_DTYPES[t.dtype], (t.numel(),), assumed_align=align)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim))
        self.bias = nn.Parameter(torch.randn(dim))
        self._compiled = {}

    def _key(self, x: torch.Tensor, align: int):
        return (tuple(x.shape), x.dtype, self.scale.dtype, align)

    def _compile(self, x: torch.Tensor, align: int):
        key = self._key(x, align)
        if key not in self._compiled:
            y = torch.empty((x.numel(),), dtype=x.dtype, device="meta")
            fakes = [_fake_flat(t, align) for t in (x, self.scale, self.bias, y)]
            self._compiled[key] = cute.compile(chain_launch, *fakes, make_fake_stream())
        return self._compiled[key]

    def compile_kernels(self, x: torch.Tensor):
        return {"chain": self._compile(x, _alignment(x, self.scale, self.bias))}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        scale, bias = self.scale.detach(), self.bias.detach()
        align = _alignment(x, scale, bias, y)
        kernel = self._compile(x, align)
        args = [from_dlpack(t.view(-1), assumed_align=align) for t in (x, scale, bias, y)]
        kernel(*args, cuda.CUstream(torch.cuda.current_stream().cuda_stream))
        return y
