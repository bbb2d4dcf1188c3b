"""Our elementwise kernels, as source text for elementwise seeds (elementwise_seed.py).

Activations (relu, relu6, tanh, sigmoid) and arithmetic of an fp32 tensor with a Python number, each one
Triton launch over the tensor's elements. The arithmetic matches PyTorch's bit for bit: both compute in
fp32 with the number rounded to fp32, and a division by a number is a multiplication by its fp32
reciprocal, as PyTorch's CUDA kernel does. That is what lets a seed keep a reference whose output is
ill-conditioned (KernelBench L2/14: a sum of 8192 nearly cancelling terms) within tolerance.

Anything else (other dtypes, a number divided by a tensor, two tensors) stays PyTorch's own operation.
"""

from __future__ import annotations

# exact at both ends and free of libdevice, which Triton's interpreter lacks; recurrent_source uses it too
TANH_SOURCE = """
@triton.jit
def _ke_tanh(x):
    # 1 - 2 / (exp(2x) + 1)
    return 1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)
"""

# activation name -> constexpr code
ACTIVATIONS = {"relu": 0, "tanh": 1, "sigmoid": 2, "relu6": 3}
# BinOp name -> constexpr code (a division is sent as a multiplication by the reciprocal)
ARITHMETIC = {"add": 0, "sub": 1, "mul": 2, "div": 2}

ELEMENTWISE_SOURCE = (
    """
ELEMENTWISE_BLOCK = 1024  # tune: 256, 512, 1024, 2048, 4096
ELEMENTWISE_WARPS = 4  # tune: 2, 4, 8
"""
    + TANH_SOURCE
    + """

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


def _ke_fp32_tensor(value):
    return isinstance(value, torch.Tensor) and value.dtype == torch.float32


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
    # `a <name> b` where one side may be a Python number; ours for an fp32 tensor and a number
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
"""
)


def tables_source() -> str:
    """The constexpr codes the runtime helpers pass their kernels, written from ACTIVATIONS and ARITHMETIC."""
    activations = ", ".join(f'"{name}": {code}' for name, code in ACTIVATIONS.items())
    arithmetic = ", ".join(f'"{name}": {code}' for name, code in ARITHMETIC.items())
    return f"_KE_ACTIVATION_CODES = {{{activations}}}\n_KE_ARITHMETIC_CODES = {{{arithmetic}}}\n"
