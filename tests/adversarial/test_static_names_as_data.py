"""Static rules for red-team round 4: attribute names given as data (a `**` mapping's keys into a callee
that may store them, the library constructors that store a mapping's keys) and raw file-descriptor I/O."""

from __future__ import annotations

import pytest

from tests.adversarial.test_static_doors import lenient_codes

COMPUTED = "k = '__array_' + 'interface__'\n"


@pytest.mark.parametrize(
    ("extra", "forward"),
    [
        ("import argparse\n", COMPUTED + "a = argparse.Namespace(**{k: {}})"),
        ("from argparse import Namespace\n", "d = {}\na = Namespace(**d)"),
        ("import functools, argparse\n", COMPUTED + "a = functools.partial(argparse.Namespace, **{k: 1})()"),
        ("import optparse\n", COMPUTED + "a = optparse.Values({k: {}})"),
        ("import logging\n", COMPUTED + "a = logging.makeLogRecord({k: {}})"),
        ("import types\n", "C = types.new_class('C', (), {}, lambda ns: ns.update({}))"),
        ("import enum\n", COMPUTED + "E = enum.Enum('E', {k: {}})"),
        ("import argparse\n\n\nclass Box(argparse.Namespace):\n    pass\n", COMPUTED + "a = Box(**{k: 1})"),
        ("import argparse\n\n\ndict = argparse.Namespace\n", COMPUTED + "a = dict(**{k: 1})"),
        ("import types\n", COMPUTED + "a = [types.SimpleNamespace][0](**{k: 1})"),
        ("import types\n\n\nclass Box(types.SimpleNamespace):\n    pass\n", "a = Box()"),
    ],
)
def test_names_as_data_are_rejected(extra: str, forward: str) -> None:
    assert "dynamic_code" in lenient_codes(forward, extra)


@pytest.mark.parametrize(
    ("extra", "forward"),
    [
        ("", "meta = {'BLOCK': 64}\nmeta['num_warps'] = 4\nk[(1,)](x, out, x.numel(), **meta)"),
        ("", "like = {'dtype': x.dtype, 'device': x.device}\nt = torch.empty(4, **like)"),
        ("def _make(n, **kw):\n    return torch.empty(n, **kw)\n", "opts = {}\nt = _make(4, **opts)"),
        ("", "t = torch.empty(4, **dict(dtype=x.dtype))"),
        ("import functools\n", "p = functools.partial(print, **{'sep': ' ', **{'end': ''}})"),
        ("import enum\n\n\nclass Mode(enum.Enum):\n    A = 1\n", "m = Mode.A"),
        ("", "d = dict(**{'a': 1})\ne = {**d}"),
        ("", "plan = (k, {'BLOCK': 64})\nkern, meta = plan\nkern[(1,)](x, out, x.numel(), **meta)"),
        ("import types\n", "box = types.SimpleNamespace(result=out, **{'n': 1})"),
        (
            "from dataclasses import dataclass\n\n\n@dataclass\nclass Plan:\n    block: int = 64\n",
            "opts = {}\np = Plan(**opts)",
        ),
        (
            "class Base:\n    def __init__(self, **kw):\n        self.kw = kw\n\n\nclass Sub(Base):\n    pass\n",
            "kw = {}\ns = Sub(**kw)",
        ),
    ],
)
def test_spelled_names_stay_allowed(extra: str, forward: str) -> None:
    assert lenient_codes(forward, extra) == set()
