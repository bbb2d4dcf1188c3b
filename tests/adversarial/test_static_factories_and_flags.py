"""Rules for blue-team round 9: a @triton.jit kernel defined inside a factory function is a kernel; a
`**` mapping into a named tuple (whose constructor takes its fields and nothing else) is harmless; a
module-level statement turning one of PyTorch's reduced-precision switches off is not patching."""

from __future__ import annotations

import pytest

from tests.adversarial.test_static_checks import codes, model

FACTORY = """
import functools
import torch
import torch.nn as nn
import triton
import triton.language as tl


@functools.cache
def make(even):
    @triton.jit
    def inner(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    return inner


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        {body}
        return out
"""


def test_a_kernel_made_by_a_factory_is_launched() -> None:
    source = FACTORY.format(body="make(True)[(1,)](x, out, x.numel(), BLOCK=64)")
    for strict in (True, False):
        assert codes(source, strict) == set()


def test_a_factory_kernel_never_launched_is_no_launch() -> None:
    assert codes(FACTORY.format(body="make(True)"), strict=False) == {"no_backend_kernel"}


NAMED = "from typing import NamedTuple\nimport collections\n"
FORWARD = (
    'out = torch.empty_like(x)\nk[(1,)](x, out, x.numel(), BLOCK=64)\nparts = {{"a": out}}\nreturn {call}'
)


@pytest.mark.parametrize(
    ("extra", "call"),
    [
        ('P = collections.namedtuple("P", ["a"])\n', "P(**parts)"),
        ('P = collections.namedtuple("P", "a")\n', "P(**parts)"),
        ('P = NamedTuple("P", [("a", torch.Tensor)])\n', "P(**parts)"),
        ("class P(NamedTuple):\n    a: torch.Tensor\n", "P(**parts)"),
    ],
)
def test_keywords_into_a_named_tuple(extra: str, call: str) -> None:
    source = NAMED + model(FORWARD.format(call=call), extra=extra)
    assert codes(source, strict=True) == set(), source


@pytest.mark.parametrize(
    "extra",
    [
        'NAMES = ["a"]\nP = collections.namedtuple("P", NAMES)\n',  # field names as data
        'P = collections.namedtuple("P", ["a"])\nP = collections.OrderedDict\n',  # rebound
        'P = collections.namedtuple("P", ["a"])\n\n\ndef P(**kw):\n    return kw\n',  # rebound by a def
        "class Q(NamedTuple):\n    a: torch.Tensor\n\n\nclass P(Q):\n    pass\n",  # a subclass may add __new__
    ],
)
def test_keywords_into_what_only_looks_like_a_named_tuple(extra: str) -> None:
    source = "import types\n" + NAMED + model(FORWARD.format(call="P(**parts)"), extra=extra)
    assert "dynamic_code" in codes(source, strict=False), source


@pytest.mark.parametrize("flag", ["torch.backends.cuda.matmul.allow_tf32", "torch.backends.cudnn.allow_tf32"])
def test_a_precision_switch_turned_off_at_import(flag: str) -> None:
    source = model(
        "out = torch.empty_like(x)\nk[(1,)](x, out, x.numel(), BLOCK=64)\nreturn out",
        extra=f"{flag} = False\n",
    )
    for strict in (True, False):
        assert codes(source, strict) == set(), source


@pytest.mark.parametrize(
    ("extra", "forward"),
    [
        ("torch.backends.cuda.matmul.allow_tf32 = True\n", ""),  # a precision shortcut turned on
        ("torch.backends.cudnn.benchmark = False\n", ""),  # another switch
        ("torch.backends.cudnn.allow_tf32 = FLAG = False\n", ""),
        ("", "torch.backends.cuda.matmul.allow_tf32 = False\n"),  # switched per call
    ],
)
def test_other_switches_stay_patching(extra: str, forward: str) -> None:
    body = forward + "out = torch.empty_like(x)\nk[(1,)](x, out, x.numel(), BLOCK=64)\nreturn out"
    assert "patching" in codes(model(body, extra=extra), strict=False)
