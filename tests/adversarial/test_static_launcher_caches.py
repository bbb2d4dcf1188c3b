"""Static rules for blue-team round 8: a launcher cache filled on first use (a module-level dict or a dict
on self, keyed by shape) holds a kernel once a `functools.partial(kernel[grid], ...)` is stored in it, so
calling what it returns is a launch; an index table from sizes (`torch.triu_indices`) allocates, like
`torch.arange`. Round 17: local functions held in a module-level table (a shape-bucketed dispatch) are on
the call path, called with the call's arguments."""

from __future__ import annotations

import pytest

from tests.adversarial.test_static_checks import LAUNCH, codes, model

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


def _launcher(name: str) -> str:
    return f"def {name}(x, out):\n    k[(1,)](x, out, x.numel(), BLOCK=64)\n\n\n"


@pytest.mark.parametrize(
    ("table", "pick"),
    [
        ("T = ((64, narrow), (1 << 62, wide))", "launch = next(f for most, f in T if x.numel() <= most)"),
        ("T = [narrow, wide]", "launch = T[0]"),
        ("T = {'narrow': narrow, 'wide': wide}", "launch = T.get('narrow')"),
        ("T = (narrow, wide)", "launch = narrow if x.numel() < 64 else T[1]"),
    ],
)
def test_a_dispatch_table_of_launch_functions_launches(table: str, pick: str) -> None:
    """Local functions held in a module-level table (shape-bucketed dispatch) are on the call path, called
    with the call's arguments: the launch they make counts."""
    source = model(
        f"out = torch.empty_like(x)\n{pick}\nlaunch(x, out)\nreturn out",
        "pass",
        _launcher("narrow") + _launcher("wide") + table + "\n",
    )
    for strict in (True, False):
        assert codes(source, strict) == set(), source


@pytest.mark.parametrize(
    ("body", "strict_codes", "lenient_codes"),
    [
        ("return torch.relu(x)", {"torch_compute_op"}, set()),
        ("return x", {"returns_input"}, {"returns_input"}),
    ],
)
def test_a_function_taken_from_a_table_is_checked_with_its_arguments(
    body: str, strict_codes: set[str], lenient_codes: set[str]
) -> None:
    """What a table's function does with the arguments it is called with is checked like a direct call's
    (before, the function was never walked: its PyTorch compute and a returned input went unseen)."""
    extra = f"def helper(x):\n    {body}\n\n\nT = {{'h': helper}}\n"
    source = model(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn T['h'](x)", "pass", extra)
    assert codes(source, True) >= strict_codes
    assert codes(source, False) >= lenient_codes
