"""Triton's interpreter on the CPU platform. libdevice functions it cannot run (signbit, nearbyint, tanh)
get our own in CPU candidates, with torch's values, so a spec using them (integer remainders, torch.round)
gets a compiler seed there; and its bf16 tl.dot, which multiplied the values' bits, is patched."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from kernelevolve.variation.compiler.render import INTERPRETER_LIBDEVICE_SOURCE, RenderError, for_interpreter

torch = pytest.importorskip("torch")

_PROBE = """
import triton
import triton.language as tl
{helpers}

@triton.jit
def probe(x_ptr, i_ptr, round_ptr, sign_ptr, isign_ptr, tanh_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    i = tl.load(i_ptr + offs)
    tl.store(round_ptr + offs, _ke_interp_nearbyint(x))
    tl.store(sign_ptr + offs, _ke_interp_signbit(x))
    tl.store(isign_ptr + offs, _ke_interp_signbit(i))
    tl.store(tanh_ptr + offs, _ke_interp_tanh(x))
"""


def test_for_interpreter_names_our_own_and_still_refuses_the_rest() -> None:
    assert for_interpreter("y = libdevice.nearbyint(x) + libdevice.exp(x)") == (
        "y = _ke_interp_nearbyint(x) + tl.math.exp(x)"
    )
    with pytest.raises(RenderError, match="digamma"):
        for_interpreter("y = libdevice.digamma(x)")


def test_our_libdevice_functions_give_torchs_values(
    interpreter: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "libdevice_probe.py").write_text(_PROBE.format(helpers=INTERPRETER_LIBDEVICE_SOURCE))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("libdevice_probe")
    halves = torch.tensor([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -0.0])
    x = torch.cat([halves, torch.randn(56) * 10]).float()
    i = torch.randint(-5, 5, (64,), dtype=torch.int64)
    rounded, sign, isign, tanh = (
        torch.empty_like(x),
        *(torch.empty(64, dtype=torch.int32) for _ in "ab"),
        torch.empty_like(x),
    )
    module.probe[(1,)](x, i, rounded, sign, isign, tanh, N=64)
    assert torch.equal(rounded, torch.round(x))  # half to even
    assert torch.equal(sign.bool(), torch.signbit(x))  # -0.0 included
    assert torch.equal(isign.bool(), i < 0)
    torch.testing.assert_close(tanh, torch.tanh(x), atol=1e-6, rtol=1e-5)


_DOT = """
import triton
import triton.language as tl


@triton.jit
def dot16(a_ptr, b_ptr, c_ptr):
    r = tl.arange(0, 16)
    a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 16 + r[None, :])
    tl.store(c_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, b, tl.zeros((16, 16), tl.float32)))
"""


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_a_half_precision_dot_under_the_interpreter_multiplies_values(interpreter: None, dtype: str) -> None:
    """Triton's interpreter keeps bf16 as uint16 bits and multiplied the bits; a candidate loaded by the
    Triton backend on the CPU gets the interpreter patched (backends/triton_interpreter.py)."""
    from kernelevolve.backends.triton import TritonBackend

    module = TritonBackend().load(_DOT, f"dot_probe_{dtype}")
    a, b = (torch.randn(16, 16).to(getattr(torch, dtype)) for _ in "ab")
    c = torch.empty(16, 16)
    module.dot16[(1,)](a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), atol=1e-4, rtol=1e-4)


_BF16 = """
import triton
import triton.language as tl


@triton.jit
def bf16_ops(x_ptr, y_ptr, cast_ptr, rtz_ptr, mul_ptr, add_ptr, lt_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    a = x.to(tl.bfloat16)
    b = tl.load(y_ptr + r)
    tl.store(cast_ptr + r, a)
    tl.store(rtz_ptr + r, x.to(tl.bfloat16, fp_downcast_rounding="rtz"))
    tl.store(mul_ptr + r, a * b)
    tl.store(add_ptr + r, a + b)
    tl.store(lt_ptr + r, (a < b).to(tl.int32))
"""


def test_bf16_arithmetic_and_casts_under_the_interpreter_match_torch(interpreter: None) -> None:
    """The interpreter multiplied bf16 bits (NaN from finite values) and truncated fp32 -> bf16 casts; a
    GPU rounds to nearest even, as torch does, unless the kernel asks for rtz."""
    from kernelevolve.backends.triton import TritonBackend

    module = TritonBackend().load(_BF16, "bf16_probe")
    n = 1024
    x = torch.randn(n) * 3
    x[:4] = torch.tensor([float("nan"), float("inf"), -0.0, 3.3e38])
    y = torch.randn(n).bfloat16()
    cast, rtz, mul, add = (torch.empty(n, dtype=torch.bfloat16) for _ in range(4))
    lt = torch.empty(n, dtype=torch.int32)
    module.bf16_ops[(1,)](x, y, cast, rtz, mul, add, lt, N=n)
    a = x.bfloat16()
    assert torch.equal(cast.float().nan_to_num(7.0), a.float().nan_to_num(7.0))
    truncated = (x.view(torch.int32) >> 16).to(torch.int16).view(torch.bfloat16)
    assert torch.equal(rtz[4:], truncated[4:])
    assert torch.equal((mul.float() - (a * y).float())[4:], torch.zeros(n - 4))
    assert torch.equal((add.float() - (a + y).float())[4:], torch.zeros(n - 4))
    assert torch.equal(lt.bool(), a < y)
