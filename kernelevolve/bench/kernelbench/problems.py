"""KernelBench problems as KernelSpecs, read from a checkout or a JSONL export (never copied here)."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kernelevolve.specs.built_dtype import DEFAULT_TOLERANCE, built_dtype
from kernelevolve.specs.reference_module import load_reference_module, size_constants
from kernelevolve.specs.traced_families import traced_families
from kernelevolve.specs.traced_tags import traced_tags
from kernelevolve.specs.tracing import TRACING_LOCK
from kernelevolve.types import KernelSpec, ShapeCase

log = logging.getLogger(__name__)

# KernelBench's precision-aware tolerances: 1e-4 for fp32 problems, 1e-2 for fp16 and bf16 ones.
KERNELBENCH_TOLERANCE = DEFAULT_TOLERANCE
# Constants at or below this are left alone by CPU scaling: they are dims, kernel sizes, strides, flags.
_MIN_SCALABLE = 16
_SCALED_FLOOR = 8


@dataclass(frozen=True)
class Problem:
    level: int
    problem_id: int
    name: str
    code: str
    # the spec argument a sweep runs it by where it is not a KernelBench problem (a shipped spec's name,
    # `kernelevolve.bench.sweep.suite`); "" for KernelBench's own, run as kernelbench:LEVEL/ID
    spec: str = ""

    @property
    def file_name(self) -> str:
        return f"{self.name}.py"


def _checkout_level_dir(root: Path, level: int) -> Path | None:
    for candidate in (root / "KernelBench" / f"level{level}", root / f"level{level}"):
        if candidate.is_dir():
            return candidate
    return None


def list_problems(path: str | Path, levels: tuple[int, ...] = (1, 2, 3)) -> list[Problem]:
    """All problems of the given levels, sorted by (level, id)."""
    root = Path(path).expanduser()
    problems: list[Problem] = []
    if root.is_file():
        with root.open() as handle:
            for line_number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{root}:{line_number}: not JSON: {exc}") from None
                if int(row["level"]) in levels:
                    problems.append(
                        Problem(int(row["level"]), int(row["problem_id"]), row["name"], row["code"])
                    )
    elif root.is_dir():
        for level in levels:
            level_dir = _checkout_level_dir(root, level)
            if level_dir is None:
                continue
            for file in level_dir.glob("*.py"):
                match = re.match(r"^(\d+)_", file.name)
                if match:
                    problems.append(Problem(level, int(match.group(1)), file.stem, file.read_text()))
    else:
        raise FileNotFoundError(f"kernelbench.path {root} is neither a JSONL file nor a KernelBench checkout")
    return sorted(problems, key=lambda p: (p.level, p.problem_id))


class UnknownProblem(LookupError, ValueError):
    """No such problem; the message names the ids the level has."""


def load_problem(path: str | Path, level: int, problem_id: int) -> Problem:
    found = list_problems(path, (level,))
    for problem in found:
        if problem.problem_id == problem_id:
            return problem
    ids = _id_ranges([p.problem_id for p in found])
    valid = f"valid ids at level {level}: {ids}" if ids else "that level has no problems there"
    raise UnknownProblem(f"KernelBench level {level} has no problem {problem_id} in {path}; {valid}")


def _id_ranges(ids: list[int]) -> str:
    """[1, 2, 3, 5] -> "1-3, 5"."""
    spans: list[list[int]] = []
    for i in sorted(set(ids)):
        if spans and i == spans[-1][1] + 1:
            spans[-1][1] = i
        else:
            spans.append([i, i])
    return ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in spans)


def problem_tags(problem: Problem) -> tuple[str, ...]:
    """What the reference does, from its traced program: the template families it is an instance of, then
    coarse tags (gemm, conv, pooling, ...). Never its name, text or id: a "softmax" in a name such as
    45_UNetSoftmax says nothing about its forward."""
    return tuple(dict.fromkeys([*traced_families(problem.code), *traced_tags(problem.code)]))


def problem_to_spec(problem: Problem) -> KernelSpec:
    """The problem as a spec, in the dtype it builds its inputs in (an fp16 problem stays fp16, with
    KernelBench's tolerance for it)."""
    dtype = built_dtype(problem.code)
    return KernelSpec(
        name=f"kb_L{problem.level}_{problem.name}",
        reference_source=problem.code,
        dtype=dtype,
        atol=KERNELBENCH_TOLERANCE[dtype],
        rtol=KERNELBENCH_TOLERANCE[dtype],
        shapes=(ShapeCase("default"),),
        backends=("triton", "cute"),
        tags=problem_tags(problem),
        origin=f"kernelbench:L{problem.level}/{problem.problem_id}",
        description=problem.name,
        reference_precision="framework_default",  # KernelBench's protocol: PyTorch's own defaults
    )


def _input_elements(source: str, params: dict[str, Any]) -> int | None:
    """Elements in inputs + parameters at these constants, counted on meta tensors; None if it fails."""
    import torch

    try:
        module = load_reference_module(source, params)
        with TRACING_LOCK, torch.device("meta"):  # see kernelevolve/specs/tracing.py
            model = module.Model(*module.get_init_inputs())
            inputs = module.get_inputs()
            model(*inputs)  # the scaled problem must still be well-formed
        total = sum(t.numel() for t in inputs if isinstance(t, torch.Tensor))
        return total + sum(p.numel() for p in model.parameters())
    except Exception:
        return None


def _halved(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return type(value)(_halved(v) for v in value)
    if isinstance(value, int) and value >= _MIN_SCALABLE:
        return max(_SCALED_FLOOR, value // 2)
    return value


def _magnitude(value: Any) -> int:
    if isinstance(value, (list, tuple)):
        return max((_magnitude(v) for v in value), default=0)
    return int(value) if isinstance(value, int) else 0


def scale_for_cpu(spec: KernelSpec, budget_elements: int) -> KernelSpec:
    """Halve the largest size constants until inputs + parameters fit `budget_elements`.

    KernelBench sizes are made for GPUs; under the Triton interpreter they would take hours. The
    changed constants are recorded in `spec.scaling` and become the spec's single shape case.
    """
    constants = size_constants(spec.reference_source)
    current: dict[str, Any] = {}
    size = _input_elements(spec.reference_source, current)
    if size is None:
        log.warning("%s: cannot size the problem on meta tensors; not scaled", spec.name)
        return spec
    frozen: set[str] = set()
    while size > budget_elements:
        movable = [
            name
            for name, value in constants.items()
            if name not in frozen and _halved(current.get(name, value)) != current.get(name, value)
        ]
        if not movable:
            break
        name = max(movable, key=lambda n: _magnitude(current.get(n, constants[n])))
        trial = {**current, name: _halved(current.get(name, constants[name]))}
        trial_size = _input_elements(spec.reference_source, trial)
        if trial_size is None or trial_size >= size:
            frozen.add(name)  # halving this one breaks the problem or does not help
            continue
        current, size = trial, trial_size
    if not current:
        return spec
    scaling = {
        "reason": "platform cpu: KernelBench sizes scaled down to run under the Triton interpreter",
        "constants": {name: [constants[name], value] for name, value in current.items()},
        "elements": size,
        "budget_elements": budget_elements,
    }
    return replace(spec, shapes=(ShapeCase("cpu_scaled", dict(current)),), scaling=scaling)
