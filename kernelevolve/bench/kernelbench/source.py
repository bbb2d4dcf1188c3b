"""KernelBench's problems as a spec source: `+spec=kernelbench:1/19` or `kb:L1/19` (entry points in
pyproject.toml, group `kernelevolve.spec_sources`), read from the config's `kernelbench.path`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kernelevolve.bench.kernelbench import problems
from kernelevolve.platforms import Platform
from kernelevolve.specs.loading import SpecError
from kernelevolve.types import KernelSpec

_ARGUMENT = re.compile(r"^(?:L|level)?(\d+)/(\d+)\w*$", re.IGNORECASE)
DEFAULT_CPU_BUDGET_ELEMENTS = 1 << 16


def resolve(argument: str, platform: Platform, config: Mapping[str, Any]) -> KernelSpec:
    """Problem LEVEL/ID as a spec; on the CPU platform its sizes scaled down to about
    `kernelbench.cpu_budget_elements`. SpecError (the caller names the argument) where it cannot be."""
    match = _ARGUMENT.match(argument.strip())
    if not match:
        raise SpecError("not a KernelBench problem: write LEVEL/ID (kernelbench:1/19, kb:L1/19)")
    options = config.get("kernelbench") or {}
    path = options.get("path")
    if not path:
        raise SpecError(
            "a KernelBench problem, but kernelbench.path is not set; pass "
            "kernelbench.path=<KernelBench checkout or problems.jsonl> (or set KERNELBENCH_PATH)"
        )
    try:
        problem = problems.load_problem(str(path), int(match.group(1)), int(match.group(2)))
    except FileNotFoundError as exc:  # UnknownProblem is a ValueError: resolve_spec names the argument
        raise SpecError(str(exc)) from None
    spec = problems.problem_to_spec(problem)
    if platform.device == "cpu":
        budget = int(options.get("cpu_budget_elements") or DEFAULT_CPU_BUDGET_ELEMENTS)
        spec = problems.scale_for_cpu(spec, budget)
    return spec
