"""Unit tests of the AST checks (no torch, no kernel runs): every hack file, every good file, each rule."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from kernelevolve.eval.static.checks import check_source, reference_state
from kernelevolve.types import Status
from tests.adversarial.spec_fixtures import CandidateCase, load_cases

HACKS = load_cases("hacks")
GOOD = load_cases("good")


def codes(source: str, strict: bool = True, backend: str = "triton") -> set[str]:
    return {issue.code for issue in check_source(textwrap.dedent(source), backend, strict)}


@pytest.mark.parametrize("case", HACKS, ids=lambda c: c.name)
def test_hack_file_gets_its_static_verdict(case: CandidateCase) -> None:
    found = codes(case.source, case.strict, case.backend)
    if case.expected_status is Status.REJECTED_STATIC:
        assert case.expected_detail <= found, (
            f"{case.name}: expected {set(case.expected_detail)}, got {found}"
        )
    else:  # only the harness can see it, so the static checks must let it through
        assert found == set(), f"{case.name} should pass the static checks, got {found}"


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "lenient"])
@pytest.mark.parametrize("case", GOOD, ids=lambda c: c.name)
def test_good_kernel_passes(case: CandidateCase, strict: bool) -> None:
    if strict and not case.strict:
        pytest.skip("a permissive honest kernel (`strict: false`): PyTorch does part of the work")
    assert check_source(case.source, case.backend, strict) == []


def test_enough_cases_and_headers_name_real_specs() -> None:
    from tests.adversarial.spec_fixtures import is_spec

    assert len(HACKS) >= 18 and len(GOOD) >= 6
    for case in HACKS + GOOD:
        assert is_spec(case.spec_name) or not case.runnable, case.name
    assert {c.expected_status for c in HACKS} >= {Status.REJECTED_STATIC, Status.INCORRECT}


def test_importing_the_checker_does_not_import_torch_or_triton() -> None:
    code = (
        "import sys; from kernelevolve.eval.static.checks import check_source; "
        "check_source('class ModelNew:\\n    def forward(self, x):\\n        return x\\n', 'triton', True); "
        "print(sorted(m for m in ('torch', 'triton') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------------------------------
# Structure and backend use

KERNEL = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
"""


def with_kernel(body: str) -> str:
    return KERNEL + textwrap.dedent(body)


def test_syntax_error_is_a_single_issue_with_its_line() -> None:
    issues = check_source("import torch\nclass ModelNew(:\n    pass\n", "triton", True)
    assert [(i.code, i.line) for i in issues] == [("syntax_error", 2)]


def test_unknown_backend_is_a_programmer_error() -> None:
    with pytest.raises(ValueError, match="cute, triton"):
        check_source("x = 1\n", "cuda_c", True)


@pytest.mark.parametrize(
    "source",
    ["import torch\n", "class ModelNew:\n    def __init__(self):\n        pass\n"],
    ids=["no_class", "no_forward"],
)
def test_missing_model_new(source: str) -> None:
    assert codes(source) == {"missing_model_new"}


def test_forward_inherited_from_a_local_base_counts() -> None:
    source = with_kernel(
        """
        class Base(nn.Module):
            def forward(self, x):
                out = torch.empty_like(x)
                k[(1,)](x, out, x.numel(), BLOCK=64)
                return out

        class ModelNew(Base):
            pass
        """
    )
    assert codes(source) == set()


def test_kernel_defined_but_never_launched() -> None:
    source = with_kernel(
        """
        class ModelNew(nn.Module):
            def forward(self, x):
                return x.clone()

            def unused(self, x):
                k[(1,)](x, x, 1, BLOCK=64)
        """
    )
    issues = check_source(source, "triton", True)
    assert [i.code for i in issues] == ["no_backend_kernel"]
    assert "k" in issues[0].message


def test_no_kernel_at_all() -> None:
    assert "no_backend_kernel" in codes(
        "import torch\nclass ModelNew:\n    def forward(self, x):\n        return x.clone()\n"
    )


@pytest.mark.parametrize(
    "body",
    [
        # module function -> method of a helper class held on self -> launch
        """
        def launch(x, out):
            k[(1,)](x, out, x.numel(), BLOCK=64)

        class Runner:
            def __call__(self, x):
                out = torch.empty_like(x)
                launch(x, out)
                return out

        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.runner = Runner()

            def forward(self, x):
                return self.runner(x)
        """,
        # autograd.Function.apply -> staticmethod forward
        """
        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                out = torch.empty_like(x)
                k[(1,)](x, out, x.numel(), BLOCK=64)
                return out

        class ModelNew(nn.Module):
            def forward(self, x):
                return Fn.apply(x)
        """,
        # a nested helper inside forward
        """
        class ModelNew(nn.Module):
            def forward(self, x):
                out = torch.empty_like(x)

                def go():
                    k[(1,)](x, out, x.numel(), BLOCK=64)

                go()
                return out
        """,
    ],
    ids=["helper_class", "autograd_function", "nested_def"],
)
def test_launch_found_through_the_call_path(body: str) -> None:
    assert codes(with_kernel(body)) == set()


def test_autotune_and_aliased_jit_decorators_are_kernels() -> None:
    source = """
    import torch
    import triton as tr
    import triton.language as tl

    @tr.autotune(configs=[tr.Config({"BLOCK": 64})], key=["n"])
    @tr.jit
    def k(x_ptr, n, BLOCK: tl.constexpr):
        pass

    class ModelNew:
        def forward(self, x):
            k[lambda meta: (tr.cdiv(x.numel(), meta["BLOCK"]),)](x, x.numel())
            return torch.empty_like(x)
    """
    assert codes(source) == set()


def test_cute_needs_a_cute_function_on_the_model() -> None:
    cute_fn = """
    import cutlass.cute as cute
    import torch

    @cute.jit
    def host(a):
        pass
    """
    used = (
        cute_fn
        + """
    class ModelNew:
        def __init__(self):
            self.fn = cute.compile(host, None)

        def forward(self, x):
            out = torch.empty_like(x)
            self.fn(out)
            return out
    """
    )
    unused = (
        cute_fn
        + """
    class ModelNew:
        def forward(self, x):
            return torch.empty_like(x)
    """
    )
    assert codes(used, backend="cute") == set()
    assert codes(unused, backend="cute") == {"no_backend_kernel"}


# ---------------------------------------------------------------------------------------------
# Strict mode: PyTorch doing the work


def model(forward_body: str, init_body: str = "pass", extra: str = "") -> str:
    return with_kernel(
        extra
        + "\nclass ModelNew(nn.Module):\n    def __init__(self, *args):\n        super().__init__()\n"
        + textwrap.indent(textwrap.dedent(init_body).strip(), " " * 8)
        + "\n\n    def forward(self, x, y=None):\n"
        + textwrap.indent(textwrap.dedent(forward_body).strip(), " " * 8)
        + "\n"
    )


LAUNCH = "k[(1,)](x, out, x.numel(), BLOCK=64)"


@pytest.mark.parametrize(
    "expr",
    [
        "torch.matmul(x, x)",
        "F.softmax(x, dim=-1)",
        "x.sum()",
        "x.exp_()",
        "x @ x",
        "x * 2",
        "-x",
        "x > 0",
        "torch.ops.aten.mm.default(x, x)",
        "self.lin(x)",
        "max(x)",
        "self.w.mean()",
        "torch.nn.functional.relu(x)",
    ],
)
def test_strict_flags_pytorch_compute(expr: str) -> None:
    source = model(
        f"out = torch.empty_like(x)\n{LAUNCH}\ny = {expr}\nreturn out",
        "self.lin = nn.Linear(4, 4)\nself.w = nn.Parameter(torch.randn(4))",
        "import torch.nn.functional as F\n",
    )
    assert codes(source, strict=True) == {"torch_compute_op"}
    assert codes(source, strict=False) == set()


def test_strict_allows_allocation_view_and_metadata() -> None:
    body = f"""
    x = x.contiguous().view(-1).reshape(x.shape).to(torch.float32)
    n, d = x.numel(), x.dim()
    s = x.stride(0) * 2 + x.shape[0] // 3 + x.size(0) % 4
    out = torch.empty_like(x)
    tmp = torch.zeros((n,), device=x.device, dtype=x.dtype).unsqueeze(0).squeeze(0)
    tmp.zero_()
    t = x.t() if x.dim() == 2 else x
    if x.dtype == torch.float16 or y is None:
        pass
    buf = x.new_empty(n)
    out2 = torch.empty(n).copy_(buf)
    {LAUNCH}
    return out
    """
    assert codes(model(body)) == set()


def test_module_level_compute_is_flagged_in_strict_only() -> None:
    source = model(
        f"out = torch.empty_like(x)\n{LAUNCH}\nreturn out", extra="TABLE = torch.softmax(torch.ones(4), 0)\n"
    )
    assert codes(source, strict=True) == {"torch_compute_op"}
    assert codes(source, strict=False) == set()


def test_init_may_use_pytorch() -> None:
    source = model(
        f"out = torch.empty_like(x)\n{LAUNCH}\nreturn out", "self.w = nn.Parameter(torch.randn(4).exp())"
    )
    assert codes(source) == set()


def test_cuda_graphs_are_strict_only() -> None:
    source = model(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn out", "self.g = torch.cuda.CUDAGraph()")
    assert codes(source, strict=True) == {"cuda_graph"}
    assert codes(source, strict=False) == set()


# ---------------------------------------------------------------------------------------------
# Rules that hold in every mode


@pytest.mark.parametrize(
    ("extra", "forward", "code"),
    [
        ("import torch as T\nc = T.compile\n", "", "torch_compile"),
        ("", "f = getattr(torch, 'compile')", "torch_compile"),
        ("import torch._dynamo\n", "", "torch_compile"),
        ("from torch.cuda import Event\n", "", "side_stream"),
        ("from concurrent.futures import ThreadPoolExecutor\n", "", "thread_spawn"),
        ("import os\n", "os.system('true')", "thread_spawn"),
        ("import os\n", "os.environ['TRITON_INTERPRET'] = '0'", "patching"),
        ("import time\n", "time.perf_counter = time.time", "patching"),
        ("", "torch.manual_seed(0)", "patching"),
        ("", "vars(torch)['relu'] = None", "introspection"),
        ("import ctypes\n", "", "introspection"),
        ("import inspect\n", "inspect.currentframe()", "introspection"),
        ("import sys\n", "m = sys.modules", "introspection"),
        ("", "z = torch._C._get_tracing_state()", "introspection"),
        ("", "f = (lambda: 0).__code__", "introspection"),
        ("", "data = open('/tmp/x').read()", "reference_access"),
        ("from . import helper\n", "", "reference_access"),
        ("import kernelevolve.eval.harness\n", "", "reference_access"),
        ("", "g = get_inputs", "reference_access"),
        ("", "eval('1')", "dynamic_code"),
        ("import importlib\n", "importlib.import_module('torch')", "dynamic_code"),
        ("", "name = 'relu'\nf = getattr(torch, name)", "dynamic_code"),
        ("import contextlib\n", "", "try_except_fallback"),
        ("from torch.utils.cpp_extension import load_inline\n", "", "dynamic_code"),
        ("import os\n", "os.execv('/bin/true', [])", "thread_spawn"),
        ("", "out.__class__ = torch.Tensor", "lazy_result"),
    ],
)
def test_always_on_rules(extra: str, forward: str, code: str) -> None:
    body = f"out = torch.empty_like(x)\n{LAUNCH}\n{forward}\nreturn out"
    source = model(body, extra=extra).replace(
        "import contextlib\n", "import contextlib\nS = contextlib.suppress\n"
    )
    assert code in codes(source, strict=False), codes(source, strict=False)


def test_tensor_subclass_is_lazy_result() -> None:
    extra = "Base = torch.Tensor\nclass Lazy(Base):\n    pass\n"
    assert "lazy_result" in codes(model(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn out", extra=extra))


def test_local_functions_shadowing_builtins_are_not_flagged() -> None:
    extra = "def open(path):\n    return path\n"
    assert codes(model(f"out = torch.empty_like(x)\n{LAUNCH}\nopen('a')\nreturn out", extra=extra)) == set()


# ---------------------------------------------------------------------------------------------
# try/except


@pytest.mark.parametrize(
    ("handler", "flagged"),
    [
        ("except Exception:\n    return torch.relu(x)", True),
        ("except:\n    raise", True),  # bare except
        ("except RuntimeError:\n    pass", True),  # swallows the kernel's failure
        ("except RuntimeError:\n    return self.slow(x)", True),  # helper that uses PyTorch
        ("except RuntimeError as exc:\n    raise ValueError('kernel failed') from exc", False),
    ],
)
def test_try_except_around_the_work(handler: str, flagged: bool) -> None:
    body = f"out = torch.empty_like(x)\ntry:\n    {LAUNCH}\n{handler}\nreturn out"
    source = model(body).replace(
        "    def forward(", "    def slow(self, x):\n        return torch.relu(x)\n\n    def forward("
    )
    assert ("try_except_fallback" in codes(source, strict=False)) is flagged


# ---------------------------------------------------------------------------------------------
# State between calls and aliasing


@pytest.mark.parametrize(
    "body",
    [
        f"out = torch.empty_like(x)\n{LAUNCH}\nself.last = out\nreturn out",  # keeps its output
        f"out = torch.empty_like(x)\n{LAUNCH}\nself.seen = x.clone()\nreturn out",  # keeps input data
        f"out = torch.empty_like(x)\n{LAUNCH}\nself.cache[x.data_ptr()] = out.shape\nreturn out",  # pointer key
        f"out = torch.empty_like(x)\n{LAUNCH}\nself.cache.setdefault(id(x), 1)\nreturn out",
        f"if self.buf is None:\n    self.buf = torch.empty_like(x)\n    out = self.buf\n    {LAUNCH}\nreturn self.buf",
        f"global LAST\nout = torch.empty_like(x)\n{LAUNCH}\nLAST = 1\nreturn out",
        f"out = torch.empty_like(x)\n{LAUNCH}\nRESULTS.append(out)\nreturn out",
        f"out = torch.empty_like(x)\n{LAUNCH}\nreturn RESULTS[0] if RESULTS else out",
        f"out = torch.empty_like(x)\n{LAUNCH}\nsetattr(self, 'last', x)\nreturn out",
    ],
    ids=[
        "output",
        "input_copy",
        "data_ptr_key",
        "id_key",
        "returns_lazy_buffer",
        "global",
        "module_list",
        "returns_module_state",
        "setattr",
    ],
)
def test_state_between_calls(body: str) -> None:
    source = model(body, "self.buf = None\nself.cache = {}", extra="RESULTS = []\nLAST = 0\n")
    assert "state_between_calls" in codes(source, strict=False)


STATEFUL_REFERENCE = """
class Model(nn.Module):
    def forward(self, x, h=None):
        if h is not None:
            self.hidden.copy_(h)
        self.hidden = torch.tanh(x + self.hidden)
        self.steps += 1
        return self.hidden * 2
"""


def test_state_the_reference_keeps_may_be_kept_under_its_names_only() -> None:
    """KernelBench L3/33 reassigns self.hidden on every call: a faithful candidate must do the same."""
    assert reference_state(STATEFUL_REFERENCE) == {"hidden", "steps"}
    assert reference_state("class Model:\n    def __init__(self):\n        self.w = 1\n") == frozenset()
    assert reference_state("def f(:\n") == frozenset()
    keeps = model(f"out = torch.empty_like(x)\n{LAUNCH}\nself.hidden = x.clone()\nreturn out")
    state = reference_state(STATEFUL_REFERENCE)

    def state_codes(source: str, kept: frozenset[str]) -> set[str]:
        return {i.code for i in check_source(textwrap.dedent(source), "triton", False, kept)}

    assert "state_between_calls" in state_codes(keeps, frozenset())
    assert "state_between_calls" not in state_codes(keeps, state)
    other = keeps.replace("self.hidden = x.clone()", "self.last = x.clone()")
    assert "state_between_calls" in state_codes(other, state)
    keyed = keeps.replace("self.hidden = x.clone()", "self.hidden[x.data_ptr()] = x.clone()")
    assert "state_between_calls" in state_codes(keyed, state)  # a cache under the name is still one


def test_mutable_default_argument_is_state() -> None:
    source = model(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn out").replace("y=None", "y={}")
    assert codes(source) == {"state_between_calls"}


def test_scratch_and_compiled_caches_are_fine() -> None:
    body = f"""
    key = (tuple(x.shape), x.dtype)
    if key not in self.scratch:
        self.scratch[key] = torch.empty(x.numel() * 2, device=x.device)
    self.calls += 1
    self.launcher = functools.partial(k, BLOCK=64)
    out = torch.empty_like(x)
    {LAUNCH}
    return out
    """
    source = model(body, "self.scratch = {}\nself.calls = 0", extra="import functools\n")
    assert codes(source) == set()


@pytest.mark.parametrize(
    "ret",
    [
        "return x",
        "return x.view(-1)",
        "return (out, x)",
        "return helper(x)",
        "y2 = x.t()\nreturn y2.contiguous()",
    ],
)
def test_returning_an_input_or_a_view_of_it(ret: str) -> None:
    source = model(
        f"out = torch.empty_like(x)\n{LAUNCH}\n{ret}", extra="def helper(t):\n    return t.reshape(-1)\n"
    )
    assert codes(source, strict=False) == {"returns_input"}


def test_rebinding_an_input_name_to_a_fresh_tensor_is_not_an_alias() -> None:
    body = f"x = x.contiguous()\nout = torch.empty_like(x)\n{LAUNCH}\nx = out\nreturn x"
    assert codes(model(body)) == set()


def test_issues_are_sorted_by_line() -> None:
    source = model(
        "import threading\nout = torch.empty_like(x)\nthreading.Thread(target=print).start()\nreturn x",
        extra="import time\ntime.sleep = print\n",
    )
    lines = [i.line for i in check_source(source, "triton", True)]
    assert lines == sorted(lines) and len(lines) >= 3


def test_a_main_guard_self_test_is_ignored_unless_name_is_rebound() -> None:
    main = """
    if __name__ == "__main__":
        x = get_inputs()[0]
        print(torch.allclose(ModelNew()(x), torch.relu(x)))
    """
    source = model(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn out") + textwrap.dedent(main)
    assert codes(source) == set()
    assert codes("__name__ = '__main__'\n" + source) == {"reference_access", "torch_compute_op"}


@pytest.mark.parametrize(("argument", "flagged"), [("x", True), ("x.numel()", False)])
def test_memoizing_a_helper_that_gets_tensors_is_state(argument: str, flagged: bool) -> None:
    helper = """
    import functools

    @functools.lru_cache(maxsize=None)
    def memo(v):
        return v
    """
    source = model(
        f"out = torch.empty_like(x)\n{LAUNCH}\nmemo({argument})\nreturn out", extra=textwrap.dedent(helper)
    )
    assert ("state_between_calls" in codes(source)) is flagged


def test_pathologically_deep_source_is_an_issue_not_a_crash() -> None:
    deep = "class ModelNew:\n    def forward(self, x):\n        return " + " + ".join(["x"] * 20000) + "\n"
    assert [i.code for i in check_source(deep, "triton", True)] == ["too_complex"]
