"""CuTe DSL backend: static checks, error classes, prompt text, and compile-only on the CPU.

The compile tests run the real DSL (nvidia-cutlass-dsl compiles to a cubin without a GPU); they skip when
the package is not installed. GPU execution tests are marked `gpu` and skip without CUDA.
"""

from __future__ import annotations

import pytest

from kernelevolve.backends import get_backend
from kernelevolve.backends.cute import (
    BACKEND,
    DEFAULT_COMPILE_ARCH,
    CuteBackend,
    cute_arch,
    describe_exception,
)
from kernelevolve.platforms import load_platform
from kernelevolve.types import Candidate, EvalRequest, EvalSettings, KernelSpec, ShapeCase, Status

ADD_REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return x + y


n = 64


def get_inputs():
    return [torch.randn(n), torch.randn(n)]


def get_init_inputs():
    return []
"""

# A complete, small CuTe candidate for ADD_REFERENCE; {expr} is the value stored per element.
GOOD_ADD = """
import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
import torch.nn as nn
from cutlass.cute.runtime import from_dlpack, make_fake_compact_tensor, make_fake_stream

THREADS = 128


@cute.kernel
def add_kernel(gX: cute.Tensor, gY: cute.Tensor, gO: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * THREADS + tidx
    if i < cute.size(gX):
        gO[i] = {expr}


@cute.jit
def add_launch(mX: cute.Tensor, mY: cute.Tensor, mO: cute.Tensor, stream: cuda.CUstream):
    blocks = (cute.size(mX) + THREADS - 1) // THREADS
    add_kernel(mX, mY, mO).launch(grid=(blocks, 1, 1), block=(THREADS, 1, 1), stream=stream)


_DTYPES = {{torch.float32: cutlass.Float32, torch.float16: cutlass.Float16, torch.bfloat16: cutlass.BFloat16}}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._compiled = {{}}

    def _kernel(self, x):
        key = (tuple(x.shape), x.dtype)
        if key not in self._compiled:
            fake = make_fake_compact_tensor(_DTYPES[x.dtype], (x.numel(),))
            self._compiled[key] = cute.compile(add_launch, fake, fake, fake, make_fake_stream())
        return self._compiled[key]

    def compile_kernels(self, x, y):
        return {{"add": self._kernel(x)}}

    def forward(self, x, y):
        out = torch.empty_like(x)
        args = [from_dlpack(t.contiguous().view(-1)) for t in (x, y, out)]
        self._kernel(x)(*args, cuda.CUstream(torch.cuda.current_stream().cuda_stream))
        return out
"""

TRITON_ONLY = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        add_kernel[(1,)](x, y, out, x.numel(), BLOCK=64)
        return out
"""

NO_KERNEL = """
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, y):
        return x + y
"""


def good_add(expr: str = "gX[i] + gY[i]") -> str:
    return GOOD_ADD.format(expr=expr)


@pytest.fixture(scope="module")
def add_spec() -> KernelSpec:
    return KernelSpec(name="add", reference_source=ADD_REFERENCE, backends=("cute",))


def codes(source: str) -> list[str]:
    return [issue.code for issue in BACKEND.static_issues(source)]


# ----------------------------------------------------------------------------------- static checks


def test_registry_resolves_the_cute_backend() -> None:
    backend = get_backend("cute")
    assert isinstance(backend, CuteBackend) and backend.name == "cute"


def test_good_candidate_passes_static_checks() -> None:
    assert codes(good_add()) == []


def test_triton_only_candidate_is_rejected() -> None:
    found = codes(TRITON_ONLY)
    assert "no_cute_kernel" in found and "foreign_dsl" in found


def test_candidate_without_a_kernel_is_rejected() -> None:
    assert codes(NO_KERNEL) == ["no_cute_kernel"]


def test_kernel_that_no_launcher_launches_is_rejected() -> None:
    source = good_add().replace("add_kernel(mX, mY, mO).launch(", "print(mX, mY, mO, ")
    assert codes(source) == ["kernel_not_launched"]


def test_launcher_must_be_used_from_model_new() -> None:
    source = good_add().replace("cute.compile(add_launch,", "cute.compile(print,")
    assert codes(source) == ["launcher_not_used"]


def test_model_new_must_define_compile_kernels() -> None:
    source = good_add().replace("def compile_kernels(self, x, y):", "def kernels(self, x, y):")
    assert codes(source) == ["no_compile_kernels"]


def test_decorators_are_resolved_through_import_aliases() -> None:
    source = (
        good_add()
        .replace("import cutlass.cute as cute\n", "import cutlass.cute as ct\nimport cutlass.cute as cute\n")
        .replace("@cute.kernel", "@ct.kernel")
        .replace("@cute.jit", "@ct.jit")
    )
    assert codes(source) == []
    assert codes(source.replace("import cutlass.cute as ct\n", "")) == ["no_cute_kernel"]


def test_unparsable_source_is_left_to_the_loader() -> None:
    assert codes("def broken(:\n") == []


# ----------------------------------------------------------------------------------- errors, arch, prompts


def test_load_errors_are_compile_errors_and_plain_run_errors_are_runtime() -> None:
    assert BACKEND.classify_error(SyntaxError("bad"), "load") is Status.COMPILE_ERROR
    assert (
        BACKEND.classify_error(RuntimeError("CUDA error: illegal memory access"), "run")
        is Status.RUNTIME_ERROR
    )


def test_cuda_runtime_errors_from_the_dsl_are_runtime_errors() -> None:
    pytest.importorskip("cutlass.cute")
    from cutlass.base_dsl.common import DSLCudaRuntimeError

    error = DSLCudaRuntimeError(700, "cudaErrorIllegalAddress")
    assert BACKEND.classify_error(error, "run") is Status.RUNTIME_ERROR


@pytest.mark.parametrize(
    ("platform_arch", "target"),
    [("sm90", "sm_90a"), ("sm80", "sm_80"), ("sm_100a", "sm_100a"), ("x86_64", "sm_90a")],
)
def test_platform_arch_maps_to_dsl_target(platform_arch: str, target: str) -> None:
    assert cute_arch(platform_arch) == target


def test_prompt_guidance_states_the_convention_and_platform_features() -> None:
    cpu = BACKEND.prompt_guidance(load_platform("cpu"))
    h200 = BACKEND.prompt_guidance(load_platform("h200"))
    a100 = BACKEND.prompt_guidance(load_platform("a100"))
    for text in (cpu, h200, a100):
        assert "compile_kernels" in text and "cute.compile" in text and "from_dlpack" in text
    assert "never run" in cpu and "sm_90a" in cpu
    assert "sm_90a" in h200 and "warpgroup" in h200 and "132 SMs" in h200
    assert "sm_80" in a100 and "warpgroup" not in a100


# ----------------------------------------------------------------------------------- compile only (CPU)


def test_compile_only_compiles_a_good_candidate(add_spec: KernelSpec) -> None:
    pytest.importorskip("cutlass.cute")
    outcome = BACKEND.compile_only(good_add(), add_spec, ShapeCase("small", {"n": 100}))
    assert outcome.ok, outcome.feedback
    assert (
        outcome.status is Status.OK and outcome.kernels == ("add",) and outcome.arch == DEFAULT_COMPILE_ARCH
    )
    assert outcome.seconds > 0 and "compiled 1 kernel" in outcome.feedback


def test_compile_only_reports_a_type_error_inside_the_kernel(add_spec: KernelSpec) -> None:
    pytest.importorskip("cutlass.cute")
    outcome = BACKEND.compile_only(good_add('gX[i] + "one"'), add_spec, ShapeCase("default"))
    assert not outcome.ok
    assert outcome.status is Status.COMPILE_ERROR and outcome.error_name == "TypeError"
    assert "unsupported operand" in outcome.feedback
    assert 'candidate line 18: gO[i] = gX[i] + "one"' in outcome.feedback  # the offending kernel line
    assert "\x1b[" not in outcome.feedback  # terminal colours stripped for prompts


def test_compile_only_reports_dsl_errors_with_the_source_line(add_spec: KernelSpec) -> None:
    pytest.importorskip("cutlass.cute")
    outcome = BACKEND.compile_only(good_add("gX[i] + undefined_value"), add_spec, ShapeCase("default"))
    assert outcome.status is Status.COMPILE_ERROR
    assert "undefined_value" in outcome.feedback


def test_compile_only_rejects_statically_before_loading(add_spec: KernelSpec) -> None:
    outcome = BACKEND.compile_only(TRITON_ONLY, add_spec, ShapeCase("default"))
    assert outcome.status is Status.REJECTED_STATIC and outcome.error_name == "foreign_dsl"


def test_compile_only_reports_load_failures(add_spec: KernelSpec) -> None:
    pytest.importorskip("cutlass.cute")
    source = good_add().replace("import torch\n", "import torch\nimport not_a_module_here\n", 1)
    outcome = BACKEND.compile_only(source, add_spec, ShapeCase("default"))
    assert outcome.status is Status.COMPILE_ERROR and outcome.error_name == "ModuleNotFoundError"


def test_compile_only_checks_what_compile_kernels_returns(add_spec: KernelSpec) -> None:
    pytest.importorskip("cutlass.cute")
    source = good_add().replace('return {"add": self._kernel(x)}', "self._kernel(x)")
    outcome = BACKEND.compile_only(source, add_spec, ShapeCase("default"))
    assert outcome.status is Status.COMPILE_ERROR and outcome.error_name == "compile_kernels_contract"


def test_compile_only_targets_the_requested_arch_and_restores_the_default(add_spec: KernelSpec) -> None:
    pytest.importorskip("cutlass.cute")
    from cutlass.cutlass_dsl import CuTeDSL

    before = CuTeDSL._get_dsl().envar.arch
    outcome = BACKEND.compile_only(good_add(), add_spec, ShapeCase("default"), arch="sm_80")
    assert outcome.ok and outcome.arch == "sm_80"
    assert CuTeDSL._get_dsl().envar.arch == before


def test_describe_exception_strips_colours() -> None:
    assert describe_exception(ValueError("\x1b[91merror\x1b[0m: bad layout")) == "error: bad layout"


# ----------------------------------------------------------------------------------- GPU


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda_available(), reason="needs a CUDA GPU")
def test_good_candidate_runs_on_the_gpu() -> None:
    pytest.importorskip("cutlass.cute")
    import torch

    BACKEND.prepare_process("cuda")
    module = BACKEND.load(good_add(), "kernelevolve_test_cute_add_gpu")
    x, y = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")
    out = module.ModelNew()(x, y)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y)


def test_a_language_not_installed_here_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    """A GPU platform supports CuTe fully, but without nvidia-cutlass-dsl its candidates could only fail."""
    import importlib.util

    from kernelevolve.app import runnable_backends

    spec = KernelSpec(
        name="s", reference_source="", shapes=(ShapeCase("a", {}),), backends=("triton", "cute")
    )
    platform = load_platform("h200")
    real_find_spec = importlib.util.find_spec

    def without_cutlass(name: str, *args: object) -> object:
        return None if name == "cutlass" else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_cutlass)
    assert runnable_backends(spec, platform, include_compile_only=True) == ("triton",)


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize(
    ("forward", "verdict"),
    [
        (None, (Status.OK, "")),
        # compiled, never run: PyTorch's sum is the output
        ("        self._kernel(x)\n        return x + y\n", (Status.INCORRECT, "no_kernel_ran")),
        # run, and thrown away: the output owes the kernel nothing
        (
            "        out = torch.empty_like(x)\n"
            "        args = [from_dlpack(t.contiguous().view(-1)) for t in (x, y, out)]\n"
            "        self._kernel(x)(*args, cuda.CUstream(torch.cuda.current_stream().cuda_stream))\n"
            "        return x + y\n",
            (Status.INCORRECT, "kernel_work_redundant"),
        ),
    ],
    ids=["honest", "never_run", "run_and_ignored"],
)
def test_permissive_cute_kernels_must_run_and_be_needed(
    add_spec: KernelSpec, forward: str | None, verdict: tuple[Status, str]
) -> None:
    """A CuTe candidate's program runs are counted and left out as Triton launches are (round 19)."""
    pytest.importorskip("cutlass.cute")
    from kernelevolve.eval import harness

    source = good_add()
    if forward is not None:
        head, _, _ = source.partition("    def forward(self, x, y):\n")
        source = head + "    def forward(self, x, y):\n" + forward
    settings = EvalSettings(strict=False, timeout_s=120, timing_trials=5, warmup_trials=1)
    request = EvalRequest(Candidate(source, "cute", "c"), add_spec, "h100", settings)
    report = harness.evaluate(request, load_platform("h100"))
    assert (report.status, report.error_name) == verdict, report.feedback
