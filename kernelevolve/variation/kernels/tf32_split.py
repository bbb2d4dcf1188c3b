"""The hi/lo split of fp32 tensors that the library wrappers' near-fp32 passes share (how seeds use it:
compiler/tf32_split.py): t = hi + lo exactly, hi keeping the sign, the exponent and TF32's 10 mantissa
bits, and the helpers that see a tensor as (outer, channels, inner) for the fused split
(tf32_split_kernel.py). `# fmt: off` keeps the layout candidates have.
"""
# fmt: off

import torch


def _ke_tf32_hi(t):
    # the sign, exponent and TF32's 10 mantissa bits (0xFFFFE000)
    return (t.view(torch.int32) & -8192).view(torch.float32)


def _ke_tf32_split(t):
    # t = hi + lo exactly
    hi = _ke_tf32_hi(t)
    return hi, t - hi


def _ke_merged(t, dims):
    # (size, stride) of t's dims merged into one, None where they do not merge (size-1 dims take any stride)
    size, stride = 1, 0
    for k in reversed(dims):
        if t.shape[k] == 1:
            continue
        if size == 1:
            stride = t.stride(k)
        elif t.stride(k) != stride * size:
            return None
        size *= t.shape[k]
    return size, stride


def _ke_split_dims(t, channel_dim):
    # (outer, inner, outer stride, inner stride) of t seen as (outer, channels, inner), None where the dims
    # before or after the channel one do not merge into one each
    outer = _ke_merged(t, range(channel_dim))
    inner = _ke_merged(t, range(channel_dim + 1, t.dim()))
    if outer is None or inner is None:
        return None
    return outer[0], inner[0], outer[1], inner[1]
