"""tanh for our elementwise and recurrent kernels (elementwise.py and the recurrent modules include it):
exact at both ends and free of libdevice, which Triton's interpreter lacks.
`# fmt: off` keeps the layout candidates have.
"""
# fmt: off

import triton
import triton.language as tl


@triton.jit
def _ke_tanh(x):
    # 1 - 2 / (exp(2x) + 1)
    return 1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)
