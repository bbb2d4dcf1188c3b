"""The fused TF32 split (how seeds use it: compiler/tf32_split.py): t seen as (outer, channels, inner),
each element read once, its hi part written at its offset in hi (t's strides) and both BF16 halves at
the pair's, in the order memory runs; and the triple (hi, lo and hi parts in fp32) of the convolution's
one-pass 3xTF32. Pasted beside tf32_split.py's code, whose `_ke_split_dims` it uses.
`# fmt: off` keeps the layout candidates have.
"""
# fmt: off

import torch
import triton
import triton.language as tl

from kernelevolve.variation.kernels.tf32_split import _ke_split_dims


@triton.jit
def _ke_split_position(index, channels, inner, outer, ORDER: tl.constexpr):
    # (outer index, channel, inner position) of a flat index; the fastest-varying index is the one memory
    # runs along: ORDER 0 inner, 1 the channel, 2 outer (inner is 1)
    if ORDER == 1:
        channel = index % channels
        rest = index // channels
        position = rest % inner
        outer_index = rest // inner
    elif ORDER == 2:
        outer_index = index % outer
        channel = index // outer
        position = index * 0
    else:
        position = index % inner
        rest = index // inner
        channel = rest % channels
        outer_index = rest // channels
    return outer_index, channel, position


@triton.jit
def _ke_split_pair_kernel(
    t_ptr, hi_ptr, pair_ptr, n, channels, inner, outer, per_group,
    t_outer_stride, t_channel_stride, t_inner_stride,
    p_outer_stride, p_channel_stride, p_inner_stride,
    LO_FIRST: tl.constexpr, ORDER: tl.constexpr, BLOCK: tl.constexpr,
):
    index = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = index < n
    outer_index, channel, position = _ke_split_position(index, channels, inner, outer, ORDER)
    offset = outer_index * t_outer_stride + channel * t_channel_stride + position * t_inner_stride
    value = tl.load(t_ptr + offset, mask=mask, other=0.0)
    hi = (value.to(tl.int32, bitcast=True) & -8192).to(tl.float32, bitcast=True)
    tl.store(hi_ptr + offset, hi, mask=mask)
    group = channel // per_group
    first = group * 2 * per_group + channel % per_group  # the group's first half; the second is per_group on
    pair_offset = outer_index * p_outer_stride + first * p_channel_stride + position * p_inner_stride
    lo = value - hi
    second_offset = pair_offset + per_group * p_channel_stride
    if LO_FIRST:
        tl.store(pair_ptr + pair_offset, _ke_bf16_bits(lo), mask=mask)
        tl.store(pair_ptr + second_offset, _ke_bf16_bits(hi), mask=mask)
    else:
        tl.store(pair_ptr + pair_offset, _ke_bf16_bits(hi), mask=mask)
        tl.store(pair_ptr + second_offset, _ke_bf16_bits(lo), mask=mask)


@triton.jit
def _ke_bf16_bits(v):
    # v rounded to bf16, to nearest with ties to even, as its 16 bits: PyTorch's own conversion, spelled
    # out so Triton's interpreter (which truncates) computes what the GPU does
    bits = v.to(tl.int32, bitcast=True)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return tl.where(v != v, 0x7FC0, rounded).to(tl.int16)


def _ke_split_order(t, channel_dim, t_dims):
    # _ke_split_position's ORDER for t: the index its memory runs along
    outer, inner, t_outer, _ = t_dims
    if t.stride(channel_dim) == 1 and inner > 1:
        return 1
    if inner == 1 and outer > 1 and t_outer == 1 and t.shape[channel_dim] > 1:
        return 2
    return 0


def _ke_split_into(t, hi, pair, groups, channel_dim, lo_first):
    # hi = t's TF32 hi part (hi has t's strides) and pair = [hi, lo] ([lo, hi] with lo_first) along
    # channel_dim within each of `groups` groups, in bf16; False where a layout is not covered (nothing written)
    t_dims, pair_dims = _ke_split_dims(t, channel_dim), _ke_split_dims(pair, channel_dim)
    if t_dims is None or pair_dims is None or hi.stride() != t.stride() or t.dtype != torch.float32:
        return False
    outer, inner, t_outer, t_inner = t_dims
    channels = t.shape[channel_dim]
    n = t.numel()
    if n:
        order = _ke_split_order(t, channel_dim, t_dims)
        _ke_split_pair_kernel[(triton.cdiv(n, 1024),)](
            t, hi, pair.view(torch.int16), n, channels, inner, outer, channels // groups,
            t_outer, t.stride(channel_dim), t_inner, pair_dims[2], pair.stride(channel_dim), pair_dims[3],
            LO_FIRST=lo_first, ORDER=order, BLOCK=1024,
        )
    return True


@triton.jit
def _ke_split_triple_kernel(
    t_ptr, triple_ptr, n, channels, inner, outer, per_group,
    t_outer_stride, t_channel_stride, t_inner_stride,
    r_outer_stride, r_channel_stride, r_inner_stride,
    LO_AT: tl.constexpr, ORDER: tl.constexpr, BLOCK: tl.constexpr,
):
    index = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = index < n
    outer_index, channel, position = _ke_split_position(index, channels, inner, outer, ORDER)
    value = tl.load(
        t_ptr + outer_index * t_outer_stride + channel * t_channel_stride + position * t_inner_stride,
        mask=mask, other=0.0,
    )
    hi = (value.to(tl.int32, bitcast=True) & -8192).to(tl.float32, bitcast=True)
    lo = value - hi
    group = channel // per_group
    first = group * 3 * per_group + channel % per_group  # the group's first part; the others per_group on
    offset = outer_index * r_outer_stride + first * r_channel_stride + position * r_inner_stride
    step = per_group * r_channel_stride
    for part in tl.static_range(3):
        if part == LO_AT:
            tl.store(triple_ptr + offset + part * step, lo, mask=mask)
        else:
            tl.store(triple_ptr + offset + part * step, hi, mask=mask)


def _ke_split_triple_into(t, triple, groups, channel_dim, lo_at):
    # triple = t's hi and lo parts three times along channel_dim within each of `groups` groups, hi in
    # each but part `lo_at`, in fp32; False where a layout is not covered (nothing written)
    t_dims, triple_dims = _ke_split_dims(t, channel_dim), _ke_split_dims(triple, channel_dim)
    if t_dims is None or triple_dims is None or t.dtype != torch.float32:
        return False
    outer, inner, t_outer, t_inner = t_dims
    channels = t.shape[channel_dim]
    n = t.numel()
    if n:
        _ke_split_triple_kernel[(triton.cdiv(n, 1024),)](
            t, triple, n, channels, inner, outer, channels // groups,
            t_outer, t.stride(channel_dim), t_inner, triple_dims[2], triple.stride(channel_dim), triple_dims[3],
            LO_AT=lo_at, ORDER=_ke_split_order(t, channel_dim, t_dims), BLOCK=1024,
        )
    return True
