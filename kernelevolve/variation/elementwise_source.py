"""Our elementwise kernels, as source text for elementwise seeds (elementwise_seed.py).

Activations (relu, relu6, tanh, sigmoid), arithmetic of an fp32 tensor with a Python number, and `+ - *`
of two fp32 tensors with PyTorch's broadcasting, each one Triton launch over the output's elements,
matching PyTorch's results bit for bit (kernels/elementwise.py, the code seeds paste in, says how). Anything
else stays PyTorch's own operation.
"""

from __future__ import annotations

from kernelevolve.variation.kernels import kernel_source

# activation name -> constexpr code
ACTIVATIONS = {"relu": 0, "tanh": 1, "sigmoid": 2, "relu6": 3}
# BinOp name -> constexpr code (a division is sent as a multiplication by the reciprocal)
ARITHMETIC = {"add": 0, "sub": 1, "mul": 2, "div": 2}

# the kernels and the helpers calling them (kernels/elementwise.py); a blank line first, as seeds join
# pieces by newlines
ELEMENTWISE_SOURCE = "\n" + kernel_source("elementwise")


def tables_source() -> str:
    """The constexpr codes the runtime helpers pass their kernels, written from ACTIVATIONS and ARITHMETIC."""
    activations = ", ".join(f'"{name}": {code}' for name, code in ACTIVATIONS.items())
    arithmetic = ", ".join(f'"{name}": {code}' for name, code in ARITHMETIC.items())
    return f"_KE_ACTIVATION_CODES = {{{activations}}}\n_KE_ARITHMETIC_CODES = {{{arithmetic}}}\n"
