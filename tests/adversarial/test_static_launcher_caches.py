"""Static rules for blue-team round 8: a launcher cache filled on first use (a module-level dict or a dict
on self, keyed by shape) holds a kernel once a `functools.partial(kernel[grid], ...)` is stored in it, so
calling what it returns is a launch; an index table from sizes (`torch.triu_indices`) allocates, like
`torch.arange`."""

from __future__ import annotations

import pytest

from tests.adversarial.test_static_checks import codes, model

OUT = "out = torch.empty_like(x)\nn = x.numel()\n"
PARTIAL = "functools.partial(k[(1,)], BLOCK=64)"


@pytest.mark.parametrize(
    ("extra", "init", "forward"),
    [
        (  # filled in a helper that returns the cache's entry
            f"_C = {{}}\n\n\ndef get(n):\n    if n not in _C:\n        _C[n] = {PARTIAL}\n    return _C[n]\n",
            "pass",
            OUT + "get(n)(x, out, n)\nreturn out",
        ),
        ("_C = {}\n", "pass", OUT + f"_C.setdefault(n, {PARTIAL})\n_C[n](x, out, n)\nreturn out"),
        (
            "",
            "self._c = {}",
            OUT + f"if n not in self._c:\n    self._c[n] = {PARTIAL}\nself._c[n](x, out, n)\nreturn out",
        ),
        ("", "self._c = {}", OUT + f"self._c.setdefault(n, {PARTIAL})(x, out, n)\nreturn out"),
    ],
)
def test_a_filled_launcher_cache_launches(extra: str, init: str, forward: str) -> None:
    source = "import functools\n" + model(forward, init, extra)
    for strict in (True, False):
        assert codes(source, strict) == set(), source


def test_a_cache_of_something_else_is_no_launch() -> None:
    """Only a stored kernel makes the cache a kernel holder: a cache of PyTorch callables gets no credit."""
    extra = "_C = {}\n"
    forward = OUT + "_C[n] = functools.partial(torch.relu)\nreturn _C[n](x)"
    assert "no_backend_kernel" in codes("import functools\n" + model(forward, extra=extra), strict=False)


def test_a_launcher_cache_keeps_its_calls_checked() -> None:
    """The cache's credit is for the launch; PyTorch compute beside it is still seen in strict mode."""
    extra = f"_C = {{}}\n\n\ndef get(n):\n    _C[n] = {PARTIAL}\n    return _C[n]\n"
    forward = OUT + "get(n)(x, out, n)\nreturn torch.relu(out)"
    assert "torch_compute_op" in codes("import functools\n" + model(forward, extra=extra), strict=True)


@pytest.mark.parametrize("call", ["torch.triu_indices(5, 5, offset=1)", "torch.tril_indices(5, 5)"])
def test_index_tables_from_sizes_allocate(call: str) -> None:
    forward = f"pairs = {call}\nout = torch.empty_like(x)\nk[(1,)](x, out, pairs, BLOCK=64)\nreturn out"
    assert codes(model(forward), strict=True) == set()
