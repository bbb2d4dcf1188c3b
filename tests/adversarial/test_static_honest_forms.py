"""Static rules for blue-team round 5: honest launch forms the checks used to reject (a kernel read from a
table with `.get`, an instance made by a classmethod, a lambda / closure / partial stored on self in
__init__, `functools.partial(kernel[grid], **meta)`, a decorator forwarding `**kwargs`), and that the code
now reached is checked like any other call-path code."""

from __future__ import annotations

import pytest

from tests.adversarial.test_static_checks import LAUNCH, codes, model

OUT = "out = torch.empty_like(x)\n"


@pytest.mark.parametrize(
    ("extra", "init", "forward"),
    [
        (
            "KERNELS = {'a': k}\n",
            "pass",
            OUT + "KERNELS.get('b', k)[(1,)](x, out, x.numel(), BLOCK=64)\nreturn out",
        ),
        (
            "KERNELS = {'a': k}\n",
            "pass",
            OUT + "kern = KERNELS.get('a')\nkern[(1,)](x, out, 1, BLOCK=64)\nreturn out",
        ),
        (
            "class L:\n    @classmethod\n    def make(cls):\n        return cls()\n\n"
            f"    def __call__(self, x, out):\n        {LAUNCH}\n\n\nRUN = L.make()\n",
            "pass",
            OUT + "RUN(x, out)\nreturn out",
        ),
        (
            f"class L:\n    @classmethod\n    def make(cls):\n        return L()\n\n    def go(self, x, out):\n        {LAUNCH}\n",
            "self.run = L.make()",
            OUT + "self.run.go(x, out)\nreturn out",
        ),
        ("", f"self.go = lambda x, out: {LAUNCH}", OUT + "self.go(x, out)\nreturn out"),
        (
            f"def make(kern):\n    def go(x, out):\n        {LAUNCH.replace('k[', 'kern[')}\n\n    return go\n",
            "self.go = make(k)",
            OUT + "self.go(x, out)\nreturn out",
        ),
        (
            f"def make(kern):\n    return lambda x, out: {LAUNCH.replace('k[', 'kern[')}\n",
            "self.go = make(k)",
            OUT + "self.go(x, out)\nreturn out",
        ),
        (
            "import functools\n",
            "self.go = functools.partial(self.run, 64)",
            OUT + "self.go(x, out)\nreturn out",
        ),
        (
            "import functools\n",
            "self.meta = {'BLOCK': 64}",
            OUT + "functools.partial(k[(1,)], **self.meta)(x, out, x.numel())\nreturn out",
        ),
        (
            "import functools\n\n\ndef deco(fn):\n    @functools.wraps(fn)\n    def wrapper(*args, **kwargs):\n"
            "        return fn(*args, **kwargs)\n\n    return wrapper\n\n\n@deco\ndef launch(x, out):\n"
            f"    {LAUNCH}\n",
            "pass",
            OUT + "launch(x, out)\nreturn out",
        ),
    ],
)
def test_honest_launch_forms_pass(extra: str, init: str, forward: str) -> None:
    source = model(forward, init, extra).replace(
        "    def forward(", f"    def run(self, block, x, out):\n        {LAUNCH}\n\n    def forward("
    )
    for strict in (True, False):
        assert codes(source, strict) == set(), source


@pytest.mark.parametrize(
    ("init", "extra"),
    [
        ("self.go = lambda x, out: (x * 2, k[(1,)](x, out, 1, BLOCK=64))", ""),
        (
            "self.go = make(k)",
            "def make(kern):\n    def go(x, out):\n        return torch.relu(x)\n\n    return go\n",
        ),
        ("self.go = make(k)", "def make(kern):\n    return lambda x, out: x + 1\n"),
        ("self.go = functools.partial(self.run, 64)", "import functools\n"),
    ],
)
def test_code_stored_on_self_is_on_the_call_path(init: str, extra: str) -> None:
    """What those callables run meets the strict rules too (before, a lambda's `x * 2` went unseen)."""
    source = model(f"out = torch.empty_like(x)\n{LAUNCH}\nself.go(x, out)\nreturn out", init, extra)
    source = source.replace(
        "    def forward(", "    def run(self, block, x, out):\n        return x * block\n\n    def forward("
    )
    assert "torch_compute_op" in codes(source, strict=True)


@pytest.mark.parametrize(
    "extra",
    [
        # the decorator also called on a library function: `fn` is not always an own function
        "def deco(fn):\n    def wrapper(*args, **kwargs):\n        return fn(*args, **kwargs)\n\n    return wrapper\n\n\n"
        "P = deco(print)\n",
        # not the innermost decorator: `fn` is what another decorator made
        "import functools\n\n\ndef deco(fn):\n    def wrapper(*args, **kwargs):\n        return fn(*args, **kwargs)\n\n"
        "    return wrapper\n\n\n@deco\n@functools.lru_cache\ndef f(a):\n    return a\n",
        # `fn` rebound in the wrapper
        "def deco(fn):\n    def wrapper(*args, **kwargs):\n        fn = print\n        return fn(*args, **kwargs)\n\n"
        "    return wrapper\n\n\n@deco\ndef f(a):\n    return a\n",
        # forwarding a mapping other than the wrapper's own **kwargs
        "def deco(fn):\n    def wrapper(*args, **kwargs):\n        return fn(*args, **{str(a): 1 for a in args})\n\n"
        "    return wrapper\n\n\n@deco\ndef f(a):\n    return a\n",
        # a plain class-level partial of a library callable still meets the ** rule
        "import functools\n\n\nP = functools.partial(print, **{str(1): 1})\n",
    ],
)
def test_forwarding_keywords_stays_checked(extra: str) -> None:
    source = model(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn out", extra=extra)
    assert "dynamic_code" in codes(source, strict=False)


def test_a_classmethod_returning_something_else_is_not_an_instance() -> None:
    """`X = Cls.make()` counts as an instance only when make returns `cls(...)`: here it returns a library
    module, whose compute call must still be seen."""
    extra = "import torch.nn.functional as F\n\n\nclass L:\n    @classmethod\n    def make(cls):\n        return F\n\n\nX = L.make()\n"
    source = model(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn X.relu(out)", extra=extra)
    assert "torch_compute_op" in codes(source, strict=True)
