"""The second judge's values: its settings, the request its process reads, and the verdict it returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from kernelevolve.results.format import first_line

# a sweep record's field: {"best": entry, "strict": entry, "error": ...} (winners.judge_run)
RECORD_KEY = "kernelbench_judge"

# KernelBench said so
CORRECT = "correct"
INCORRECT = "incorrect"  # compiled, then wrong output, a shape mismatch or an error while running
COMPILE_ERROR = "compile_error"  # ModelNew did not load
# KernelBench could not say: its import failed, it raised (no CUDA), crashed or ran past the timeout
JUDGE_FAILED = "judge_failed"

# KernelBench's precision names for our spec dtypes (its tolerance follows: fp32 1e-4, fp16/bf16 1e-2)
PRECISIONS = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


def kernelbench_precision(dtype: str) -> str:
    """A spec's dtype as KernelBench names it; anything else passes through for KernelBench to refuse."""
    return PRECISIONS.get(dtype, dtype)


@dataclass(frozen=True)
class JudgeSettings:
    """Where KernelBench is (its checkout or that checkout's `src`) and how long and hard it judges.

    The trial counts are those of KernelBench's own evaluation scripts (its function's defaults, 1 and
    10, are lighter than its published protocol)."""

    path: str
    timeout_s: float = 600.0
    correct_trials: int = 5
    perf_trials: int = 100
    timing_method: str = "cuda_event"
    seed: int = 42


@dataclass(frozen=True)
class JudgeRequest:
    """One kernel for the judge's process, as JSON in a file."""

    kernelbench_src: str  # the folder holding the `kernelbench` package
    reference_source: str  # KernelBench's "original model src": Model, get_inputs, get_init_inputs
    kernel_source: str  # its "custom model src": our candidate, which defines ModelNew
    backend: str = "triton"  # KernelBench's backend names: triton, cute, cuda...
    precision: str = "fp32"
    device: str = "cuda:0"
    name: str = "reference"  # the reference's name in KernelBench's log lines
    correct_trials: int = 5
    perf_trials: int = 100
    timing_method: str = "cuda_event"
    seed: int = 42

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: dict[str, Any]) -> JudgeRequest:
        known = {f.name for f in fields(JudgeRequest)}
        return JudgeRequest(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class KernelBenchVerdict:
    """What KernelBench's evaluator made of one kernel. Its times are KernelBench's own: the mean of its
    CUDA-event trials (an L2 flush before each), where ours report medians."""

    status: str
    compiled: bool = False
    correct: bool = False
    runtime_ms: float | None = None  # the kernel's mean time, from its eval result
    reference_ms: float | None = None  # measure_ref_program_time's mean, eager
    error: str = ""  # one line: why it is not correct, or why it could not judge
    correctness_trials: str = ""  # KernelBench's "(passed / trials)"
    hardware: str = ""
    kernelbench_path: str = ""
    kernelbench_commit: str | None = None  # None where the checkout is not a git repository
    stubbed: tuple[str, ...] = ()  # modules its package imports that were missing, replaced by stubs
    wall_s: float = 0.0

    @property
    def speedup(self) -> float | None:
        """The reference's time over the kernel's, both by KernelBench's timing."""
        if self.correct and self.runtime_ms and self.reference_ms:
            return self.reference_ms / self.runtime_ms
        return None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["stubbed"] = list(self.stubbed)
        data["speedup"] = self.speedup
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> KernelBenchVerdict:
        known = {f.name for f in fields(KernelBenchVerdict)}
        values = {k: v for k, v in data.items() if k in known}
        values["stubbed"] = tuple(values.get("stubbed") or ())
        return KernelBenchVerdict(**values)

    @staticmethod
    def failed(
        reason: str, path: str = "", commit: str | None = None, wall_s: float = 0.0
    ) -> KernelBenchVerdict:
        """KernelBench could not judge: `reason` cut to its first line."""
        return KernelBenchVerdict(
            JUDGE_FAILED,
            error=first_line(reason),
            kernelbench_path=path,
            kernelbench_commit=commit,
            wall_s=wall_s,
        )

    def line(self) -> str:
        """The verdict in one line, for a command's output."""
        if self.status == JUDGE_FAILED:
            return f"could not judge: {self.error}"
        text = self.status.replace("_", " ") + (
            f" {self.correctness_trials}" if self.correctness_trials else ""
        )
        if self.runtime_ms is not None:
            text += f", {self.runtime_ms:.4g} ms"
            if self.reference_ms is not None and self.speedup is not None:
                text += f" vs its reference's {self.reference_ms:.4g} ms: {self.speedup:.2f}x"
        return text + (f" ({self.error})" if self.error else "")

    def report_lines(self) -> list[str]:
        """What `python -m kernelevolve.verify` prints of it, below our verdict."""
        lines = [f"KernelBench's evaluator: {self.line()}"]
        if self.kernelbench_path:
            commit = self.kernelbench_commit
            lines.append(f"  from {self.kernelbench_path}" + (f" at {commit}" if commit else ""))
        return lines
