"""The in-process harness on the CPU with the Triton interpreter: every verdict the search relies on."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

import pytest
import torch

from kernelevolve.backends.triton import BACKEND, TritonBackend
from kernelevolve.eval import baseline_timing, correctness, harness, timers
from kernelevolve.platforms import Platform
from kernelevolve.specs.reference import ReferenceSpecError, apply_shape, load_reference
from kernelevolve.types import Candidate, EvalReport, EvalRequest, EvalSettings, KernelSpec, ShapeCase, Status


@pytest.fixture(scope="module", autouse=True)
def _interpreter() -> Iterator[None]:
    """What a CPU evaluation child does first (TRITON_INTERPRET=1), undone after this module."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_INTERPRET", "1")
        BACKEND.prepare_process("cpu")
        yield


@pytest.fixture()
def run(
    add_spec: KernelSpec, cpu_platform: Platform, fast_settings: EvalSettings
) -> Callable[..., EvalReport]:
    def run_source(source: str, spec: KernelSpec = add_spec, backend: str = "triton") -> EvalReport:
        request = EvalRequest(Candidate(source, backend, "test"), spec, cpu_platform.name, fast_settings)
        return harness.evaluate(request, cpu_platform)

    return run_source


def test_correct_kernel_passes_with_latency_per_shape(run: Callable[..., EvalReport], add_kernel) -> None:
    report = run(add_kernel())
    assert report.status is Status.OK, report.feedback
    assert set(report.latency) == {"n64", "n100"}
    assert all(t.method == "wall" and t.trials == 3 and t.median_ms > 0 for t in report.latency.values())
    assert report.max_abs_error == 0.0
    assert report.worker.endswith(":cpu") and report.wall_s > 0


def test_wrong_kernel_is_incorrect_with_location(run: Callable[..., EvalReport], add_kernel) -> None:
    report = run(add_kernel(result="x - y"))
    assert report.status is Status.INCORRECT
    assert report.error_name == "mismatch"
    assert "max abs error" in report.feedback and "at index (" in report.feedback
    assert "expected" in report.feedback and "shape 'n64'" in report.feedback
    assert report.max_abs_error is not None and report.max_abs_error > 0.1


def test_syntax_error_is_compile_error_with_line(run: Callable[..., EvalReport], add_kernel) -> None:
    report = run(add_kernel() + "\ndef broken(:\n    pass\n")
    assert report.status is Status.COMPILE_ERROR
    assert report.error_name == "SyntaxError"
    assert 'File "candidate.py"' in report.feedback and "def broken(:" in report.feedback


def test_exception_in_forward_is_runtime_error_with_candidate_frame(
    run: Callable[..., EvalReport], add_kernel
) -> None:
    report = run(add_kernel(prologue='raise ValueError("boom at forward")'))
    assert report.status is Status.RUNTIME_ERROR
    assert report.error_name == "ValueError"
    assert 'File "candidate.py"' in report.feedback and "in forward" in report.feedback
    assert report.feedback.rstrip().endswith("ValueError: boom at forward")


def test_partial_write_is_caught_by_poisoned_allocations(run: Callable[..., EvalReport], add_kernel) -> None:
    """The runner's host allocations come filled with 0xFE bytes (-1.69e38 as float32): the half the
    kernel leaves unwritten cannot read as zeros or as a previous result."""
    report = run(add_kernel(store_mask="offs < n // 2"))
    assert report.status is Status.INCORRECT
    assert report.error_name in ("nonfinite", "mismatch")
    assert "got -1.69474e+38" in report.feedback or "got nan" in report.feedback


def test_input_mutation_is_detected(run: Callable[..., EvalReport], add_kernel) -> None:
    report = run(add_kernel(extra_store="tl.store(x_ptr + offs, x * 0, mask=mask)"))
    assert report.status is Status.INCORRECT
    assert report.error_name == "input_mutated" and "input_mutated" in report.flags
    assert "input 0 was modified" in report.feedback


def test_out_of_bounds_store_hits_guard_band(run: Callable[..., EvalReport], add_kernel) -> None:
    report = run(add_kernel(extra_store="tl.store(x_ptr + n + offs, x, mask=mask)"))
    assert report.status is Status.INCORRECT
    assert report.error_name == "guard_band" and "guard_band" in report.flags


def test_wrong_shape_is_rejected(run: Callable[..., EvalReport], add_kernel) -> None:
    report = run(add_kernel(alloc="torch.empty((x.numel(), 1), device=x.device, dtype=x.dtype)"))
    assert report.status is Status.INCORRECT
    assert report.error_name == "shape"
    assert "shape (64, 1) != reference (64,)" in report.feedback


def test_source_without_kernel_is_rejected_statically(run: Callable[..., EvalReport]) -> None:
    source = (
        "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x, y):\n        return x\n"
    )
    report = run(source)
    assert report.status is Status.REJECTED_STATIC
    assert report.error_name == "no_backend_kernel"
    assert report.latency == {}


def test_backend_outside_spec_is_rejected(run: Callable[..., EvalReport], add_kernel) -> None:
    report = run(add_kernel(), backend="cute")
    assert report.status is Status.REJECTED_STATIC and report.error_name == "backend_not_allowed"


def test_broken_reference_raises_spec_error(
    run: Callable[..., EvalReport], add_kernel, add_spec: KernelSpec
) -> None:
    broken = KernelSpec(
        name="broken", reference_source=add_spec.reference_source.replace("x + y", "x + y[:3]")
    )
    with pytest.raises(ReferenceSpecError, match="reference Model failed"):
        run(add_kernel(), spec=broken)


# ------------------------------------------------------------------------------------ baselines


def test_measure_baselines_times_eager_per_shape(
    add_spec: KernelSpec, cpu_platform: Platform, fast_settings: EvalSettings
) -> None:
    baselines = baseline_timing.measure_baselines(add_spec, cpu_platform, fast_settings)
    assert set(baselines) == {"n64", "n100"}
    for baseline in baselines.values():
        assert baseline.eager.trials == 3 and baseline.eager.median_ms > 0
        assert baseline.compiled is None and baseline.compile_error == ""


# ------------------------------------------------------------------------------------ reference


def test_apply_shape_names_valid_constants_and_resets_between_shapes(add_spec: KernelSpec) -> None:
    module = load_reference(add_spec.reference_source)
    apply_shape(module, ShapeCase("big", {"n": 7}))
    assert module.get_inputs()[0].shape == (7,)
    apply_shape(module, ShapeCase("default"))
    assert module.n == 64
    with pytest.raises(ReferenceSpecError, match=r"unknown constant\(s\) \['batch'\].*defines \['n'\]"):
        apply_shape(module, ShapeCase("bad", {"batch": 2}))


def test_apply_shape_recomputes_derived_constants() -> None:
    source = "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n        return x\n\n"
    source += "channels = 64\nbias_shape = (channels, 1, 1)\n\ndef get_inputs():\n    return [torch.randn(bias_shape)]\n\n"
    source += "def get_init_inputs():\n    return []\n"
    module = load_reference(source)
    apply_shape(module, ShapeCase("small", {"channels": 8}))
    assert module.bias_shape == (8, 1, 1) and module.get_inputs()[0].shape == (8, 1, 1)
    apply_shape(module, ShapeCase("default"))
    assert module.bias_shape == (64, 1, 1)


# ------------------------------------------------------------------------------------ correctness


def _inputs(seed: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(8, generator=generator), torch.randn(8, generator=generator)]


def _check(candidate: Callable[..., object], reference: Callable[..., object] | None = None):
    return correctness.check_correctness(
        reference or (lambda x, y: x + y), candidate, _inputs, seeds=[1, 2, 3], atol=1e-5, rtol=1e-5
    )


def test_correctness_accepts_exact_result() -> None:
    verdict = _check(lambda x, y: torch.add(x, y))
    assert verdict.ok and verdict.max_abs_error == 0.0


def test_correctness_rejects_output_aliasing_an_input() -> None:
    verdict = _check(lambda x, y: x, reference=lambda x, y: x.clone())
    assert not verdict.ok and verdict.check == "aliasing"
    assert "output_aliases_input" in verdict.flags


def test_correctness_rejects_results_cached_from_the_first_call() -> None:
    cache: list[torch.Tensor] = []

    def stale(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if not cache:
            cache.append(x + y)
        return cache[0].clone()

    verdict = _check(stale)
    assert not verdict.ok and verdict.check == "mismatch" and verdict.trial == 1


def test_correctness_refills_the_same_storage_so_address_keyed_caches_fail() -> None:
    cache: dict[int, torch.Tensor] = {}

    def by_address(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if x.data_ptr() not in cache:
            cache[x.data_ptr()] = x + y
        return cache[x.data_ptr()].clone()

    verdict = _check(by_address)
    assert not verdict.ok and verdict.check == "mismatch" and verdict.trial == 1


def test_correctness_compares_tuples_and_dtypes() -> None:
    pair = _check(lambda x, y: (x + y, x * y), reference=lambda x, y: (x + y, x * y))
    assert pair.ok
    short = _check(lambda x, y: (x + y,), reference=lambda x, y: (x + y, x * y))
    assert not short.ok and short.check == "output_type"
    halved = _check(lambda x, y: (x + y).half())
    assert not halved.ok and "dtype torch.float16 != reference torch.float32" in halved.feedback


def test_a_reference_drawing_in_forward_is_told_apart_and_keeps_its_buffers() -> None:
    dropout = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5), torch.nn.BatchNorm1d(8))
    inputs = [torch.randn(6, 8)]
    running = dropout[2].running_mean.clone()
    assert correctness.draws_in_forward(dropout, inputs, seed=3, atol=1e-5, rtol=1e-5)
    assert torch.equal(dropout[2].running_mean, running) and int(dropout[2].num_batches_tracked) == 0
    assert not correctness.draws_in_forward(dropout.eval(), inputs, seed=3, atol=1e-5, rtol=1e-5)
    assert not correctness.draws_in_forward(lambda x: x * 2, inputs, seed=3, atol=1e-5, rtol=1e-5)

    def raises(x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("no")

    assert not correctness.draws_in_forward(raises, inputs, seed=3, atol=1e-5, rtol=1e-5)


def test_a_named_tuple_of_torch_matches_its_items_and_a_python_subclass_does_not_pass() -> None:
    from kernelevolve.eval import timed_guard

    def reference(x: torch.Tensor, y: torch.Tensor) -> object:
        return torch.max(torch.stack([x, y]), dim=0)

    assert _check(lambda x, y: tuple(torch.max(torch.stack([x, y]), dim=0)), reference=reference).ok
    assert _check(reference, reference=reference).ok
    assert timed_guard.builtin_tuple(tuple) and timed_guard.builtin_tuple(torch.return_types.max)

    class Lazy(tuple):  # a Python subclass: its methods would run when the harness reads it
        pass

    assert not timed_guard.builtin_tuple(Lazy) and not timed_guard.builtin_tuple(list)
    pair = torch.return_types.max((torch.zeros(2), torch.zeros(2, dtype=torch.int64)))
    assert len(timed_guard._plain_leaves(pair, 0)) == 2
    with pytest.raises(timed_guard.TimedViolation):
        timed_guard._plain_leaves(Lazy((torch.zeros(2),)), 0)


def test_wall_timer_records_every_trial() -> None:
    stats = timers.time_callable(torch.add, [_inputs(1), _inputs(2)], "cpu", 5, 1, True, 1 << 20)
    assert (
        stats.method == "wall" and stats.trials == 5 and 0 < stats.min_ms <= stats.median_ms <= stats.max_ms
    )
    with pytest.raises(ValueError, match="at least one input set"):
        timers.time_callable(torch.add, [], "cpu", 5, 1, False, 0)
    calls: list[int] = []

    def fresh(call: int) -> list[torch.Tensor]:
        calls.append(call)
        return _inputs(call)

    timers.time_callable(torch.add, fresh, "cpu", 4, 2, False, 0)
    assert calls == [0, 1, 2, 3, 4, 5]  # every warm-up and timed call gets its own inputs


# ------------------------------------------------------------------------------------ backend


def test_triton_static_issues_require_a_launch_on_the_call_path(add_kernel) -> None:
    """The launch rule is the generic checks' call-path rule; the backend only asks for a kernel."""
    from kernelevolve.eval.static.checks import check_source

    assert BACKEND.static_issues(add_kernel()) == [] and check_source(add_kernel(), "triton", True) == []
    unlaunched = add_kernel().replace("add_kernel[(triton.cdiv(n, 32),)](x, y, out, n, BLOCK=32)", "pass")
    issues = check_source(unlaunched, "triton", True)
    assert "no_backend_kernel" in [i.code for i in issues]
    assert any("never launches" in i.message for i in issues)
    kernelless = (
        "import torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"
    )
    assert [i.code for i in BACKEND.static_issues(kernelless)] == ["no_backend_kernel"]
    via_helper = (
        add_kernel().replace(
            "add_kernel[(triton.cdiv(n, 32),)](x, y, out, n, BLOCK=32)", "launch(x, y, out, n)"
        )
        + "\n\ndef launch(x, y, out, n):\n    add_kernel[(1,)](x, y, out, n, BLOCK=128)\n"
    )
    assert BACKEND.static_issues(via_helper) == [] and check_source(via_helper, "triton", True) == []
    aliased = (
        add_kernel()
        .replace("@triton.jit", "@triton_jit")
        .replace("import triton\n", "import triton\nfrom triton import jit as triton_jit\n")
    )
    assert "@triton_jit" in aliased and BACKEND.static_issues(aliased) == []


def test_triton_classify_error() -> None:
    from triton.compiler.errors import CompilationError
    from triton.runtime.errors import OutOfResources

    node = ast.parse("x = 1").body[0]
    assert BACKEND.classify_error(CompilationError("x = 1", node, "bad"), "run") is Status.COMPILE_ERROR
    assert (
        BACKEND.classify_error(OutOfResources(1 << 20, 1 << 16, "shared memory"), "run")
        is Status.COMPILE_ERROR
    )
    assert BACKEND.classify_error(RuntimeError("index out of range"), "run") is Status.RUNTIME_ERROR
    assert BACKEND.classify_error(ImportError("no module"), "load") is Status.COMPILE_ERROR


def test_triton_prompt_guidance_mentions_platform(cpu_platform: Platform) -> None:
    text = TritonBackend().prompt_guidance(cpu_platform)
    assert "interpreter" in text and "tl.dot" in text and "num_warps" in text


# ------------------------------------------------------------------------------------ GPU


@pytest.mark.gpu
def test_cuda_path_uses_events_and_poisoned_allocator(add_kernel, add_spec: KernelSpec) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kernelevolve.platforms import load_platform

    platform = load_platform("h100")
    settings = EvalSettings(
        correctness_trials=3, timing_trials=20, warmup_trials=3, measure_compile_baseline=False
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("TRITON_INTERPRET", raising=False)
        good = harness.evaluate(
            EvalRequest(Candidate(add_kernel(), "triton", "t"), add_spec, "h100", settings), platform
        )
        partial = harness.evaluate(
            EvalRequest(
                Candidate(add_kernel(store_mask="offs < n // 2"), "triton", "t"), add_spec, "h100", settings
            ),
            platform,
        )
    assert good.status is Status.OK, good.feedback
    assert all(t.method == "cuda_event" for t in good.latency.values())
    assert partial.status is Status.INCORRECT and partial.error_name == "nonfinite"


def test_late_device_fault_is_the_kernels_and_other_errors_are_flagged_as_harness_bugs() -> None:
    late = RuntimeError("CUDA error: an illegal memory access was encountered")
    fields = harness._unexpected_error_fields(late, "abc")
    assert fields["status"] is Status.RUNTIME_ERROR and "asynchronous kernel fault" in fields["feedback"]
    assert "flags" not in fields
    bug = harness._unexpected_error_fields(KeyError("oops"), "abc")
    assert bug["flags"] == ("harness_error",)


_TRANSPOSED_ADD_REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return (x + y).t()  # a permuted, non-contiguous output, as attention's often is


def get_inputs():
    return [torch.randn(8, 12), torch.randn(8, 12)]


def get_init_inputs():
    return []
"""


def test_an_output_in_a_permuted_layout_is_timed_and_checked(
    run: Callable[..., EvalReport], add_kernel
) -> None:
    spec = KernelSpec(
        name="transposed_add", reference_source=_TRANSPOSED_ADD_REFERENCE, shapes=(ShapeCase("default"),)
    )
    report = run(add_kernel().replace("return out", "return out.t()"), spec=spec)
    assert report.status is Status.OK, report.feedback
    assert report.latency["default"].median_ms > 0


def test_every_other_call_poisons_with_zeros_where_an_output_is_not_floating() -> None:
    from kernelevolve.eval.remote import RemoteCandidate, RunnerFailure, _poison_byte
    from kernelevolve.eval.shared_tensors import SharedArena
    from kernelevolve.eval.tensor_guards import POISON_BYTE

    sent: list[int] = []

    class Runner:
        def request(self, message: dict, timeout: float) -> dict:
            sent.append(message["poison"])
            return {"ok": False}  # the reply does not matter here

    arena = SharedArena("cpu")
    try:
        remote = RemoteCandidate(Runner(), 0, arena, deadline=1e18, where="")  # type: ignore[arg-type]
        for expected in [torch.zeros(3)] * 2 + [(torch.zeros(3), torch.zeros(3, dtype=torch.bool))] * 2:
            with pytest.raises(RunnerFailure):
                remote.call([arena.empty_like(torch.zeros(3))], expected, seed=0)
    finally:
        arena.close()
    assert sent == [POISON_BYTE, POISON_BYTE, POISON_BYTE, 0]
    # launches left out: the byte no exact output is made of throughout, whatever the call's turn
    all_true, all_false = torch.ones(4, dtype=torch.bool), torch.zeros(4, dtype=torch.bool)
    assert _poison_byte([torch.zeros(2), all_true], 2, "off") == 0
    assert _poison_byte([all_false], 2, "off") == POISON_BYTE
    assert _poison_byte([torch.full((3,), -1)], 1, "off") == 0
    assert _poison_byte([torch.tensor(-1)], 1, "off") == 0  # a 0-dim integer output (`torch.argmax(x)`)
    assert _poison_byte([torch.zeros(2)], 2, None) == POISON_BYTE


def test_checked_calls_reuse_their_output_slots_poisoned_again() -> None:
    """A slot per call stayed allocated until the evaluation ended (CUDA IPC); reused, it must hold poison
    again at every call, never the runner's last output."""
    from kernelevolve.eval.remote import RemoteCandidate, RunnerFailure
    from kernelevolve.eval.shared_tensors import SharedArena

    seen: list[tuple[str, bool]] = []

    class Runner:
        def request(self, message: dict, timeout: float) -> dict:
            slot = message["slots"][0]
            tensor = slot.open()
            seen.append((slot.path, bool(torch.isnan(tensor).all())))
            tensor.fill_(1.0)  # the last call's output, left in the slot
            return {"ok": False}

    arena = SharedArena("cpu")
    try:
        remote = RemoteCandidate(Runner(), 0, arena, deadline=1e18, where="")  # type: ignore[arg-type]
        for expected in [torch.zeros(3), torch.zeros(3), torch.zeros(2, 2), torch.zeros(2, 2).t()]:
            with pytest.raises(RunnerFailure):
                remote.call([arena.empty_like(torch.zeros(3))], expected, seed=0)
    finally:
        arena.close()
    paths = [path for path, _ in seen]
    assert paths[0] == paths[1]  # the same layout: the same slot
    assert len(set(paths)) == 3  # another shape, then the same shape transposed: new ones each
    assert all(poisoned for _, poisoned in seen)


def test_a_cpu_timing_the_wall_clock_disagrees_with_once_is_re_timed(
    run: Callable[..., EvalReport], add_kernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernelevolve.eval import judged_run

    readings: list[int] = []

    def stalled_once(progress: list[tuple[float, int]]) -> float:
        readings.append(len(progress))
        return 1e6 if len(readings) == 1 else 0.0  # the first timed window looked a second a call

    monkeypatch.setattr(judged_run, "observed_call_ms", stalled_once)
    report = run(add_kernel())
    assert report.status is Status.OK, report.feedback
    assert len(readings) == 3  # the first shape timed twice, the second once


def test_a_cpu_timing_the_wall_clock_disagrees_with_twice_is_judged_forged(
    run: Callable[..., EvalReport], add_kernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernelevolve.eval import judged_run

    monkeypatch.setattr(judged_run, "observed_call_ms", lambda progress: 1e6)
    report = run(add_kernel())
    assert report.status is Status.INCORRECT and report.error_name == "timing_inconsistent"
    assert "re-timed once" in report.feedback and "timing_forged" in report.flags


def test_a_trials_tensors_are_freed_before_the_next_trials_are_made() -> None:
    """Multi-GB inputs: a judge holding one trial's inputs and outputs while making the next's needs twice
    the memory (the H100's level-1 out-of-memory errors, experiments/adversarial_gpu session 35)."""
    import weakref

    made: list[weakref.ref[torch.Tensor]] = []
    live_at_making: list[int] = []

    def make_inputs(seed: int) -> list[torch.Tensor]:
        live_at_making.append(sum(ref() is not None for ref in made))
        x, y = _inputs(seed)
        made.extend([weakref.ref(x), weakref.ref(y)])
        return [x, y]

    def reference(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = x + y
        made.append(weakref.ref(out))
        return out

    verdict = correctness.check_correctness(
        reference, lambda x, y: torch.add(x, y), make_inputs, seeds=[1, 2, 3], atol=1e-5, rtol=1e-5
    )
    assert verdict.ok
    assert live_at_making == [0, 0, 0]
