"""libdevice functions Inductor emits that have no tl.math twin, for Triton's interpreter (render.py's
`for_interpreter` calls these in their place on the CPU platform, and pastes this module into a candidate
that needs one): the sign bit (Inductor's integer remainder and floor division), round half to even
(torch.round), and tanh. `# fmt: off` keeps the layout candidates have.
"""
# fmt: off

import triton
import triton.language as tl


@triton.jit
def _ke_interp_signbit(x):
    if x.dtype.is_floating():
        if x.dtype.primitive_bitwidth == 64:
            return (x.to(tl.int64, bitcast=True) < 0).to(tl.int32)
        return (x.to(tl.float32).to(tl.int32, bitcast=True) < 0).to(tl.int32)
    return (x < 0).to(tl.int32)


@triton.jit
def _ke_interp_nearbyint(x):
    low = tl.math.floor(x)
    rest = x - low
    odd = (low - 2.0 * tl.math.floor(low * 0.5)) != 0.0
    up = (rest > 0.5) | ((rest == 0.5) & odd)
    return tl.where(up, low + 1.0, low)


@triton.jit
def _ke_interp_tanh(x):
    # 1 - 2 / (exp(2x) + 1)
    return 1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)
