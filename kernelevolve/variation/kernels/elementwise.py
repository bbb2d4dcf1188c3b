"""Our elementwise kernels and the helpers that call them, pasted into elementwise seeds (elementwise_seed.py).

Activations (relu, relu6, tanh, sigmoid), arithmetic of an fp32 tensor with a Python number, and `+ - *`
of two fp32 tensors with PyTorch's broadcasting, each one Triton launch over the output's elements. The
arithmetic matches PyTorch's bit for bit: both compute in fp32 (a single correctly rounded operation per
element) with a number rounded to fp32, and a division by a number is a multiplication by its fp32
reciprocal, as PyTorch's CUDA kernel does. That is what lets a seed keep a reference whose output is
ill-conditioned (KernelBench L2/14: a sum of 8192 nearly cancelling terms; L3/48-49, Mamba2: outputs
near 1e18 from differences of cumulative sums) within tolerance. Two tensors' results also get the
strides PyTorch's would have, so the library calls after them see the same layouts.

Anything else (other dtypes, a number divided by a tensor, a tensor divided by a tensor, whose
correctly rounded fp32 quotient Triton's `/` does not promise) stays PyTorch's own operation.

`# fmt: off` keeps the layout candidates have, and the checkers take the code as it is: constexpr
branches written as if/else (SIM108), `zip`s over sequences of one length (B905), untyped lists.
"""
# fmt: off
# ruff: noqa: SIM108, B905
# mypy: disable-error-code="var-annotated"

import math
import os
import struct

import torch
import torch.nn as nn
import triton
import triton.language as tl

from kernelevolve.variation.kernels.tanh import _ke_tanh

# ke:stand-in begin
# the constexpr codes, written per seed from ACTIVATIONS and ARITHMETIC (elementwise_source.tables_source)
_KE_ACTIVATION_CODES: dict[str, int] = {}
_KE_ARITHMETIC_CODES: dict[str, int] = {}
# ke:stand-in end

# One choice each, so tune leaves them alone: the seed's time is the library's, and tuning these two
# gained nothing (experiments/full_sweep_h200).
ELEMENTWISE_BLOCK = 1024  # tune: 1024
ELEMENTWISE_WARPS = 4  # tune: 4

# ke:include tanh


@triton.jit
def _ke_activation_kernel(x_ptr, y_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    if OP == 0:
        y = tl.where(x > 0.0, x, 0.0)
        y = tl.where(x != x, x, y)  # NaN stays NaN, as in torch.relu
    elif OP == 1:
        y = _ke_tanh(x)
    elif OP == 2:
        y = tl.sigmoid(x)
    else:
        y = tl.where(x > 0.0, tl.where(x < 6.0, x, 6.0), 0.0)
        y = tl.where(x != x, x, y)  # NaN stays NaN, as in F.relu6
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def _ke_scalar_kernel(x_ptr, y_ptr, s, n, OP: tl.constexpr, NUMBER_FIRST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    if OP == 0:
        y = x + s
    elif OP == 1:
        if NUMBER_FIRST:
            y = s - x
        else:
            y = x - s
    else:
        y = x * s
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def _ke_pair(a, b, OP: tl.constexpr):
    if OP == 0:
        y = a + b
    elif OP == 1:
        y = a - b
    else:
        y = a * b
    return y


@triton.jit
def _ke_tensors_kernel(a_ptr, b_ptr, y_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    # both contiguous in the output's shape: one flat index
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, _ke_pair(a, b, OP), mask=mask)


@triton.jit
def _ke_broadcast_kernel(
    a_ptr, b_ptr, y_ptr, n, s1, s2, s3, s4, s5,
    a0, a1, a2, a3, a4, a5, b0, b1, b2, b3, b4, b5, y0, y1, y2, y3, y4, y5,
    OP: tl.constexpr, WIDE: tl.constexpr, BLOCK: tl.constexpr,
):
    # the output's linear index split over six dims (dim 0 takes the rest; sizes of 1 compile away), each
    # tensor addressed through its own strides, 0 where it is broadcast. Indices are 32-bit unless n
    # needs more (64-bit division is several times slower); offsets are always 64-bit
    if WIDE:
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    else:
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    i5 = (offs % s5).to(tl.int64)
    rest = offs // s5
    i4 = (rest % s4).to(tl.int64)
    rest = rest // s4
    i3 = (rest % s3).to(tl.int64)
    rest = rest // s3
    i2 = (rest % s2).to(tl.int64)
    rest = rest // s2
    i1 = (rest % s1).to(tl.int64)
    i0 = (rest // s1).to(tl.int64)
    a = tl.load(a_ptr + (i0 * a0 + i1 * a1 + i2 * a2 + i3 * a3 + i4 * a4 + i5 * a5), mask=mask, other=0.0)
    b = tl.load(b_ptr + (i0 * b0 + i1 * b1 + i2 * b2 + i3 * b3 + i4 * b4 + i5 * b5), mask=mask, other=0.0)
    y_offs = i0 * y0 + i1 * y1 + i2 * y2 + i3 * y3 + i4 * y4 + i5 * y5
    tl.store(y_ptr + y_offs, _ke_pair(a, b, OP), mask=mask)


def _ke_fp32_tensor(value):
    # an fp32 tensor where our kernel can run: on the GPU, or on the CPU under Triton's interpreter; a CPU
    # tensor in a GPU process (a buffer the model keeps there) stays PyTorch's
    if not (isinstance(value, torch.Tensor) and value.dtype == torch.float32):
        return False
    return value.is_cuda or (value.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") == "1")


def _ke_activation(x, name):
    if not _ke_fp32_tensor(x):
        if name in ("relu", "relu6"):
            return torch.clamp(x, 0, 6) if name == "relu6" else torch.relu(x)
        return torch.tanh(x) if name == "tanh" else torch.sigmoid(x)
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n:  # a launch needs at least one program
        code = _KE_ACTIVATION_CODES[name]
        grid = (triton.cdiv(n, ELEMENTWISE_BLOCK),)
        _ke_activation_kernel[grid](x, y, n, OP=code, BLOCK=ELEMENTWISE_BLOCK, num_warps=ELEMENTWISE_WARPS)
    return y


def _ke_arithmetic(a, b, name):
    # `a <name> b`: ours for an fp32 tensor and a Python number, or two fp32 tensors; else PyTorch's
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return _ke_tensors(a, b, name)
    number_first = not isinstance(a, torch.Tensor)
    tensor, number = (b, a) if number_first else (a, b)
    is_number = isinstance(number, (int, float)) and not isinstance(number, bool)
    if not (_ke_fp32_tensor(tensor) and is_number) or (number_first and name == "div"):
        return _ke_python_arithmetic(a, b, name)
    number = _ke_fp32(number)  # the kernel's argument is fp32, as PyTorch rounds the number
    if name == "div":
        # PyTorch's CUDA kernel multiplies by the fp32 reciprocal. Python divides in double and _ke_fp32
        # rounds that: with 53 >= 2 * 24 + 2 bits the twice-rounded quotient is the correctly rounded one
        number = _ke_fp32(1.0 / number)
    x = tensor.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        grid = (triton.cdiv(n, ELEMENTWISE_BLOCK),)
        _ke_scalar_kernel[grid](
            x, y, number, n, OP=_KE_ARITHMETIC_CODES[name], NUMBER_FIRST=number_first,
            BLOCK=ELEMENTWISE_BLOCK, num_warps=ELEMENTWISE_WARPS,
        )
    return y


def _ke_tensors(a, b, name):
    ours = name != "div" and _ke_fp32_tensor(a) and _ke_fp32_tensor(b) and a.device == b.device
    if not (ours and a.numel() and b.numel()):
        return _ke_python_arithmetic(a, b, name)
    code = _KE_ARITHMETIC_CODES[name]
    if a.shape == b.shape and a.is_contiguous() and b.is_contiguous():
        y = torch.empty(a.shape, dtype=torch.float32, device=a.device)
        n = y.numel()
        grid = (triton.cdiv(n, ELEMENTWISE_BLOCK),)
        _ke_tensors_kernel[grid](a, b, y, n, OP=code, BLOCK=ELEMENTWISE_BLOCK, num_warps=ELEMENTWISE_WARPS)
        return y
    shape = torch.broadcast_shapes(a.shape, b.shape)
    y = _ke_pair_output(a, b, shape, name)
    dims = _ke_dims(shape, a.expand(shape).stride(), b.expand(shape).stride(), y.stride())
    if len(dims) > _KE_DIMS:
        return _ke_python_arithmetic(a, b, name)
    sizes = [size for size, _ in dims]
    a_steps, b_steps, y_steps = zip(*(steps for _, steps in dims))
    n = y.numel()
    grid = (triton.cdiv(n, ELEMENTWISE_BLOCK),)
    _ke_broadcast_kernel[grid](
        a, b, y, n, *sizes[1:], *a_steps, *b_steps, *y_steps, OP=code,
        WIDE=n + ELEMENTWISE_BLOCK >= 2**31, BLOCK=ELEMENTWISE_BLOCK, num_warps=ELEMENTWISE_WARPS,
    )
    return y


def _ke_pair_output(a, b, shape, name):
    # strided as PyTorch's own result: contiguous for contiguous operands, else following their layout
    # (its rule, run on meta tensors), so that the calls after it see the layout the reference's see
    if a.is_contiguous() and b.is_contiguous():
        return torch.empty(shape, dtype=torch.float32, device=a.device)
    a_meta, b_meta = (torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta") for t in (a, b))
    strides = _ke_python_arithmetic(a_meta, b_meta, name).stride()
    return torch.empty_strided(shape, strides, dtype=torch.float32, device=a.device)


_KE_DIMS = 6


def _ke_dims(shape, *strides):
    # (size, each tensor's stride) per dim of the output, dims of size 1 dropped and neighbours that every
    # tensor steps through as one merged (fewer divisions per element), padded on the left to _KE_DIMS
    dims = []
    for d, size in enumerate(shape):
        if size == 1:
            continue
        steps = [s[d] for s in strides]
        if dims and all(outer == inner * size for outer, inner in zip(dims[-1][1], steps)):
            dims[-1] = (dims[-1][0] * size, steps)
        else:
            dims.append((size, steps))
    return [(1, [0] * len(strides))] * (_KE_DIMS - len(dims)) + dims


def _ke_python_arithmetic(a, b, name):
    if name == "add":
        return a + b
    if name == "sub":
        return a - b
    return a * b if name == "mul" else a / b


def _ke_fp32(number):
    try:
        return struct.unpack("f", struct.pack("f", float(number)))[0]
    except OverflowError:  # beyond fp32's range: infinite, as in PyTorch
        return math.copysign(math.inf, number)


class _KeActivation(nn.Module):
    def __init__(self, name):
        super().__init__()
        self.name = name

    def forward(self, x):
        return _ke_activation(x, self.name)
