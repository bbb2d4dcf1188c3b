"""Core values passed between the parts of kernelevolve: frozen dataclasses with no torch import, each
converting to and from plain JSON, as the graph checkpoint, the judge/runner harness and Ray move them."""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any


class Status(str, Enum):
    """Outcome of evaluating one candidate; only `OK` is feasible."""

    REJECTED_STATIC = "rejected_static"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    INCORRECT = "incorrect"
    TIMEOUT = "timeout"
    WORKER_CRASH = "worker_crash"
    COMPILED_ONLY = "compiled_only"  # compiled on a platform that cannot run the backend; never feasible
    OK = "ok"


@dataclass(frozen=True)
class ShapeCase:
    """One benchmark shape: overrides of the reference module's size constants (``batch_size = 16``, read
    by ``get_inputs``/``get_init_inputs``); empty ``params``: the reference as written. ``bucket``: where
    the case stands for a range of sizes (specs/shape_ranges.py), constant -> [from, to] of those sizes."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    bucket: dict[str, list[int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        extra = {"bucket": {k: list(v) for k, v in self.bucket.items()}} if self.bucket else {}
        return {"name": self.name, "params": dict(self.params), **extra}

    @staticmethod
    def from_json(data: dict[str, Any]) -> ShapeCase:
        bucket = {str(k): [int(x) for x in v] for k, v in (data.get("bucket") or {}).items()}
        return ShapeCase(name=str(data["name"]), params=dict(data.get("params", {})), bucket=bucket)


# Input distributions a winner is checked on before it is reported (specs/input_distributions.py); a
# reference needing narrower inputs (probabilities summing to 1) lists only "normal", get_inputs() as written.
DEFAULT_INPUT_DISTRIBUTIONS: tuple[str, ...] = ("normal", "uniform", "heavy_tailed", "large")


@dataclass(frozen=True)
class Backward:
    """A training spec's backward: the inputs (positions in get_inputs()) and parameters (names) that need
    gradients, None meaning all; the reference's gradients are autograd's (`specs/training.py`)."""

    inputs: tuple[int, ...] | None = None
    parameters: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: None if v is None else list(v) for k, v in asdict(self).items()}

    @staticmethod
    def from_json(data: dict[str, Any]) -> Backward:
        inputs, params = data.get("inputs"), data.get("parameters")
        return Backward(
            None if inputs is None else tuple(int(i) for i in inputs),
            None if params is None else tuple(str(p) for p in params),
        )


@dataclass(frozen=True)
class KernelSpec:
    """What to optimise: a reference computation plus how to check and benchmark it."""

    name: str
    reference_source: str  # full text of a module defining Model, get_inputs, get_init_inputs
    dtype: str = "float32"  # floating inputs and parameters are cast to this
    atol: float = 1e-4
    rtol: float = 1e-4
    shapes: tuple[ShapeCase, ...] = (ShapeCase("default"),)
    backends: tuple[str, ...] = ("triton",)
    tags: tuple[str, ...] = ()
    origin: str = "inline"  # "shipped:<name>", "file:<path>", "kernelbench:L<level>/<id>"
    reference_path: str | None = None
    scaling: dict[str, Any] = field(default_factory=dict)  # size constants changed for this platform
    description: str = ""
    # A winner is checked again on inputs from each of these before it is reported (not part of `key`:
    # they change how a kernel is checked, not what a correct one computes).
    input_distributions: tuple[str, ...] = DEFAULT_INPUT_DISTRIBUTIONS
    # The mode the reference and ModelNew run in: "as_built" (what the constructor leaves, nn.Module's
    # training mode by default, as KernelBench runs them), "eval" or "train" (`reference.apply_mode`).
    mode: str = "as_built"
    # What the reference runs at: "exact_fp32", or "framework_default" (PyTorch's defaults: cuDNN's fp32
    # convolutions in TF32), KernelBench's protocol (`specs/precision.py`).
    reference_precision: str = "exact_fp32"
    # A training spec: forward and backward searched together, checked on outputs and gradients
    backward: Backward | None = None

    @property
    def key(self) -> str:
        """Content hash of everything that changes what a correct kernel must compute."""
        parts: tuple[Any, ...] = (
            self.reference_source,
            self.dtype,
            self.atol,
            self.rtol,
            tuple((s.name, sorted(s.params.items())) for s in self.shapes),
            self.mode,
            self.reference_precision,
        )
        if self.backward is not None:  # forward specs keep the keys they had (caches, stores)
            parts += (self.backward,)
        payload = repr(parts)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["shapes"] = [s.to_json() for s in self.shapes]
        data["backends"] = list(self.backends)
        data["tags"] = list(self.tags)
        data["input_distributions"] = list(self.input_distributions)
        data["backward"] = None if self.backward is None else self.backward.to_json()
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> KernelSpec:
        return KernelSpec(
            name=data["name"],
            reference_source=data["reference_source"],
            dtype=data.get("dtype", "float32"),
            atol=float(data.get("atol", 1e-4)),
            rtol=float(data.get("rtol", 1e-4)),
            shapes=tuple(ShapeCase.from_json(s) for s in data.get("shapes", [{"name": "default"}])),
            backends=tuple(data.get("backends", ("triton",))),
            tags=tuple(data.get("tags", ())),
            origin=data.get("origin", "inline"),
            reference_path=data.get("reference_path"),
            scaling=dict(data.get("scaling", {})),
            description=data.get("description", ""),
            input_distributions=tuple(data.get("input_distributions", DEFAULT_INPUT_DISTRIBUTIONS)),
            mode=str(data.get("mode", "as_built")),
            reference_precision=str(data.get("reference_precision", "exact_fp32")),
            backward=Backward.from_json(data["backward"]) if data.get("backward") is not None else None,
        )


_WHITESPACE_AT_LINE_END = re.compile(r"[ \t]+$", re.MULTILINE)


def normalise_source(source: str) -> str:
    """Normalisation used for candidate identity: trailing blanks and blank-line runs do not count."""
    text = _WHITESPACE_AT_LINE_END.sub("", source.replace("\r\n", "\n")).strip("\n")
    return re.sub(r"\n{3,}", "\n\n", text) + "\n"


def candidate_id(source: str, backend: str) -> str:
    return hashlib.sha256(f"{backend}\n{normalise_source(source)}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Candidate:
    """A kernel proposal: Python source defining ``ModelNew`` (KernelBench convention)."""

    source: str
    backend: str
    operator: str  # name of the variation operator that made it
    mode: str = "seed"  # seed, tune, replay, fusion, generate, improve, combine, repair, translate
    parent_ids: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return candidate_id(self.source, self.backend)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source": self.source,
            "backend": self.backend,
            "operator": self.operator,
            "mode": self.mode,
            "parent_ids": list(self.parent_ids),
            "metadata": dict(self.metadata),
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> Candidate:
        return Candidate(
            source=data["source"],
            backend=data["backend"],
            operator=data["operator"],
            mode=data.get("mode", "seed"),
            parent_ids=tuple(data.get("parent_ids", ())),
            metadata=dict(data.get("metadata", {})),
        )


# Host-bound: the host's median time to issue a call is at least this share of the call's GPU time.
HOST_BOUND_SHARE = 0.5


@dataclass(frozen=True)
class TimingStats:
    """Latency of one callable at one shape, in milliseconds."""

    median_ms: float
    mean_ms: float
    std_ms: float
    min_ms: float
    max_ms: float
    trials: int
    method: str = "wall"  # "cuda_event" or "wall"
    host_ms: float | None = None  # median host time to issue one timed call (GPU timing only)
    stopped_by: str = ""  # the rule that ended timing before its trials (eval/timers.py), or ""
    # the judge's own clock per finished call (its readings of the runner's completion counter); None: unmeasured
    wall_ms: float | None = None
    median_from_checked_calls: bool = False  # the median's calls were past checking (`timed_checks`)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def host_bound(self) -> bool:
        return self.host_ms is not None and self.host_ms >= HOST_BOUND_SHARE * self.median_ms

    @staticmethod
    def from_json(data: dict[str, Any]) -> TimingStats:
        return TimingStats(**data)

    @staticmethod
    def from_samples(
        samples_ms: list[float], method: str, host_samples_ms: list[float] | None = None
    ) -> TimingStats:
        host = TimingStats.from_samples(host_samples_ms, "wall").median_ms if host_samples_ms else None
        ordered = sorted(samples_ms)
        n = len(ordered)
        if n == 0:
            raise ValueError("no timing samples")
        mid = n // 2
        median = ordered[mid] if n % 2 else 0.5 * (ordered[mid - 1] + ordered[mid])
        mean = sum(ordered) / n
        std = math.sqrt(sum((x - mean) ** 2 for x in ordered) / n)
        return TimingStats(median, mean, std, ordered[0], ordered[-1], n, method, host)


@dataclass(frozen=True)
class Baseline:
    """Reference timings at one shape: PyTorch eager and torch.compile (None if unavailable).

    `eager_exact`: eager again at the candidates' precision (exact fp32 convolutions), where that
    differs from PyTorch's default (GPU convolutions); None elsewhere. Speedups are against `eager`.

    `*_within_tolerance` / `*_max_error`: the baseline's own output, as timed, checked like a candidate's
    against the reference at the candidates' precision (None: not checked). A baseline outside the
    tolerance (TF32 convolutions, reordered sums) is one a candidate may not imitate.

    `compiled_exact`: torch.compile compiled and timed again at the candidates' precision, where its own
    output missed the tolerance and the precision differs: what a user who needs the tolerance would run
    (None elsewhere); `compiled_exact_within_tolerance` says whether that output meets it.

    `compiled_graphs`: torch.compile with CUDA graphs (what `mode="reduce-overhead"` adds), where the
    default one's time is host-bound on a GPU: launch overhead is what a replay of our own removes, and this
    is torch.compile's own way to remove it (None elsewhere). Its kernels and output are the default one's."""

    eager: TimingStats
    compiled: TimingStats | None = None
    compile_error: str = ""
    eager_exact: TimingStats | None = None
    eager_within_tolerance: bool | None = None
    eager_max_error: float | None = None
    compiled_within_tolerance: bool | None = None
    compiled_max_error: float | None = None
    compiled_exact: TimingStats | None = None
    compiled_exact_within_tolerance: bool | None = None
    compiled_graphs: TimingStats | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)  # the timings nested as their own `to_json` gives them

    @staticmethod
    def from_json(data: dict[str, Any]) -> Baseline:
        compiled = data.get("compiled")
        exact = data.get("eager_exact")
        compiled_exact = data.get("compiled_exact")
        compiled_graphs = data.get("compiled_graphs")
        return Baseline(
            eager=TimingStats.from_json(data["eager"]),
            compiled=TimingStats.from_json(compiled) if compiled else None,
            compile_error=data.get("compile_error", ""),
            eager_exact=TimingStats.from_json(exact) if exact else None,
            eager_within_tolerance=data.get("eager_within_tolerance"),
            eager_max_error=data.get("eager_max_error"),
            compiled_within_tolerance=data.get("compiled_within_tolerance"),
            compiled_max_error=data.get("compiled_max_error"),
            compiled_exact=TimingStats.from_json(compiled_exact) if compiled_exact else None,
            compiled_exact_within_tolerance=data.get("compiled_exact_within_tolerance"),
            compiled_graphs=TimingStats.from_json(compiled_graphs) if compiled_graphs else None,
        )


@dataclass(frozen=True)
class EvalSettings:
    """How hard the harness checks and times; one value per run, from config."""

    correctness_trials: int = 5
    timing_trials: int = 100
    warmup_trials: int = 10
    # warm-up ends early once three calls are done and those after the first took this long (0: never)
    warmup_enough_ms: float = 50.0
    timeout_s: float = 120.0
    seed: int = 0
    strict: bool = True  # no PyTorch compute ops for the work itself
    flush_l2: bool = True
    # GPU busy-wait queued before each timed call: hides the host's issue time and jitter up to this much
    launch_cover_us: float = 100.0
    max_speedup: float = 50.0  # beyond this a result is re-verified on a fresh worker
    measure_compile_baseline: bool = True
    # Racing (one-shape specs): a median over race_margin x the best of its kind stops timing (0: off)
    race_margin: float = 1.5
    race_min_trials: int = 10
    # Settling: a candidate's timing stops once its median's 95% CI is within +-this fraction (0: off)
    settle_relative_halfwidth: float = 0.0
    settle_min_trials: int = 20
    # ...and from 10 calls on where warm-up calls took at least this long (0: from settle_min_trials)
    settle_long_call_ms: float = 10.0
    # MiB of reference outputs kept per evaluation child for the next checks of the problem; 0: none
    reference_cache_mb: float = 2048.0
    input_distribution: str = "normal"  # of correctness inputs (specs/input_distributions.py)
    # Host memory a runner may take (RLIMIT_DATA on the process importing the candidate); 0: no limit
    host_memory_gb: float = 32.0
    # The runner precompiles, unlocked, only shapes whose inputs take up to this many MiB (0: every shape)
    precompile_max_input_mb: float = 0.0

    def __post_init__(self) -> None:
        """A value out of range is a ValueError naming the setting, the value and what is valid."""
        for name, least in _EVAL_SETTING_MINIMA.items():
            value = getattr(self, name)
            integer = isinstance(EvalSettings.__dataclass_fields__[name].default, int)
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not number or (integer and int(value) != value) or not math.isfinite(value) or value < least:
                kind = "an integer" if integer else "a number"
                bound = "> 0" if name in _POSITIVE else f">= {least:g}"
                raise ValueError(f"{name}={value!r}: must be {kind} {bound}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise ValueError(f"seed={self.seed!r}: must be an integer")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: dict[str, Any]) -> EvalSettings:
        return EvalSettings(**data)


# The least value of each numeric EvalSettings field (timeout_s: above it, not at it).
_POSITIVE = ("timeout_s",)
_EVAL_SETTING_MINIMA: dict[str, float] = {
    "correctness_trials": 1,
    "timing_trials": 1,
    "warmup_trials": 0,
    "warmup_enough_ms": 0,
    "timeout_s": 1e-9,
    "launch_cover_us": 0,
    "max_speedup": 0,  # 0: every result is re-verified
    "race_margin": 0,
    "race_min_trials": 1,
    "settle_relative_halfwidth": 0,
    "settle_min_trials": 1,
    "settle_long_call_ms": 0,
    "reference_cache_mb": 0,
    "host_memory_gb": 0,
    "precompile_max_input_mb": 0,
}


@dataclass(frozen=True)
class EvalRequest:
    candidate: Candidate
    spec: KernelSpec
    platform: str
    settings: EvalSettings = EvalSettings()
    # Median ms, at the spec's one shape, of the best kernel so far of this candidate's kind (backend,
    # own kernels or not): what racing compares against. None: time every trial.
    incumbent_ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate.to_json(),
            "spec": self.spec.to_json(),
            "platform": self.platform,
            "settings": self.settings.to_json(),
            "incumbent_ms": self.incumbent_ms,
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> EvalRequest:
        return EvalRequest(
            candidate=Candidate.from_json(data["candidate"]),
            spec=KernelSpec.from_json(data["spec"]),
            platform=data["platform"],
            settings=EvalSettings.from_json(data["settings"]),
            incumbent_ms=data.get("incumbent_ms"),
        )


@dataclass(frozen=True)
class EvalReport:
    """Everything the harness learned about one candidate. Failures are data, never exceptions."""

    candidate_id: str
    status: Status
    error_name: str = ""  # exception class or check name, e.g. "OutOfResources", "uses_torch_op"
    feedback: str = ""  # human/LLM-readable explanation, used for repair prompts
    max_abs_error: float | None = None
    latency: dict[str, TimingStats] = field(default_factory=dict)  # shape name -> timing
    # Training specs: the forward pass alone, per shape (`latency` is forward + backward; the backward's
    # share is the difference); empty for forward specs
    forward_latency: dict[str, TimingStats] = field(default_factory=dict)
    baselines: dict[str, Baseline] = field(default_factory=dict)  # shape name -> baseline
    flags: tuple[str, ...] = ()  # excessive_speedup, guard_band, input_mutated, reverified, ...
    worker: str = ""
    wall_s: float = 0.0
    phase_s: dict[str, float] = field(default_factory=dict)  # stage -> seconds (load, correctness, ...)

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    def to_json(self) -> dict[str, Any]:
        return {
            "candidate_id": self.candidate_id,
            "status": self.status.value,
            "error_name": self.error_name,
            "feedback": self.feedback,
            "max_abs_error": self.max_abs_error,
            "latency": {k: v.to_json() for k, v in self.latency.items()},
            "forward_latency": {k: v.to_json() for k, v in self.forward_latency.items()},
            "baselines": {k: v.to_json() for k, v in self.baselines.items()},
            "flags": list(self.flags),
            "worker": self.worker,
            "wall_s": self.wall_s,
            "phase_s": dict(self.phase_s),
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> EvalReport:
        return EvalReport(
            candidate_id=data["candidate_id"],
            status=Status(data["status"]),
            error_name=data.get("error_name", ""),
            feedback=data.get("feedback", ""),
            max_abs_error=data.get("max_abs_error"),
            latency={k: TimingStats.from_json(v) for k, v in data.get("latency", {}).items()},
            forward_latency={k: TimingStats.from_json(v) for k, v in data.get("forward_latency", {}).items()},
            baselines={k: Baseline.from_json(v) for k, v in data.get("baselines", {}).items()},
            flags=tuple(data.get("flags", ())),
            worker=data.get("worker", ""),
            wall_s=float(data.get("wall_s", 0.0)),
            phase_s={k: float(v) for k, v in data.get("phase_s", {}).items()},
        )


@dataclass(frozen=True, order=True)
class FitnessValue:
    """Ordered fitness: any feasible value beats every infeasible one, then higher objective wins."""

    feasible: bool
    objective: float  # geomean speedup vs eager across benchmark shapes (0 when infeasible)
    speedup_vs_compile: float | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: dict[str, Any]) -> FitnessValue:
        return FitnessValue(**data)


INFEASIBLE = FitnessValue(False, 0.0)


@dataclass(frozen=True)
class StaticIssue:
    """A reason found in the source (by AST inspection) to reject a candidate before running it."""

    code: str  # stable machine name, e.g. "no_backend_kernel", "torch_compute_op", "thread_spawn"
    message: str
    line: int = 0
