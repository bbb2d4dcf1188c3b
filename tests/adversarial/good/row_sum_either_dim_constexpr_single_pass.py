# good: sum over either dim with keepdim (the dim from get_init_inputs): the kept and reduced axes mapped
# to strides per call, partial sums of chunks of the reduced axis into a partials buffer and a second
# kernel summing them, skipped by a constexpr flag chosen per call when one chunk covers the axis (then
# the first kernel stores the result directly)
# spec: shipped:row_sum
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def partial_sum_kernel(
    x_ptr, dst_ptr, length, s_keep, s_red, chunks, CHUNK: tl.constexpr, SINGLE: tl.constexpr
):
    o = tl.program_id(0)
    ch = tl.program_id(1)
    offs = ch * CHUNK + tl.arange(0, CHUNK)
    x = tl.load(x_ptr + o * s_keep + offs * s_red, mask=offs < length, other=0.0)
    total = tl.sum(x, axis=0)
    if SINGLE:
        tl.store(dst_ptr + o, total)
    else:
        tl.store(dst_ptr + o * chunks + ch, total)


@triton.jit
def finish_kernel(part_ptr, out_ptr, chunks, BLOCK: tl.constexpr):
    o = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    p = tl.load(part_ptr + o * chunks + offs, mask=offs < chunks, other=0.0)
    tl.store(out_ptr + o, tl.sum(p, axis=0))


class ModelNew(nn.Module):
    CHUNK = 1024

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        keep_dim = 1 - self.dim
        kept, length = x.shape[keep_dim], x.shape[self.dim]
        out_shape = [1, 1]
        out_shape[keep_dim] = kept
        out = torch.empty(out_shape, device=x.device, dtype=x.dtype)
        chunk = min(self.CHUNK, triton.next_power_of_2(length))
        chunks = triton.cdiv(length, chunk)
        single = chunks == 1
        dst = out if single else torch.empty((kept, chunks), device=x.device, dtype=torch.float32)
        partial_sum_kernel[(kept, chunks)](
            x, dst, length, x.stride(keep_dim), x.stride(self.dim), chunks, CHUNK=chunk, SINGLE=single
        )
        if not single:
            finish_kernel[(kept,)](dst, out, chunks, BLOCK=triton.next_power_of_2(chunks))
        return out
