"""A new operator is its module and its registration: registered from outside the package (a registry call
or an installed package's entry point), it runs in a CPU search with no edit to the composition root."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import kernelevolve
from kernelevolve.api import Budget
from kernelevolve.search.interfaces import ProposalContext
from kernelevolve.types import Candidate
from kernelevolve.variation import OPERATORS, OperatorContext, load_entry_points
from tests.conftest import ADD_REFERENCE, add_kernel_source

FAST = [
    "platform.eval.timing_trials=3",
    "platform.eval.warmup_trials=1",
    "platform.eval.correctness_trials=2",
]


class OneKernel:
    """Seeds the search with one vector-add kernel, once."""

    name = "one_kernel"
    arity = 0

    def __init__(self, context: OperatorContext, label: str = "") -> None:
        self.context, self.label, self.done = context, label, False

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        if self.done:
            return []
        self.done = True
        return [Candidate(add_kernel_source(), "triton", self.name, metadata={"label": self.label})]


@pytest.fixture
def registered() -> Iterator[list[OperatorContext]]:
    made: list[OperatorContext] = []

    def factory(context: OperatorContext, **options: Any) -> OneKernel:
        made.append(context)
        return OneKernel(context, **options)

    OPERATORS.register("one_kernel")(factory)
    try:
        yield made
    finally:
        OPERATORS._factories.pop("one_kernel", None)


def test_an_operator_registered_from_outside_runs_in_a_cpu_search(
    registered: list[OperatorContext], tmp_path: Path
) -> None:
    from kernelevolve.types import KernelSpec, ShapeCase

    spec = KernelSpec(name="tiny_add", reference_source=ADD_REFERENCE, shapes=(ShapeCase("n64", {"n": 64}),))
    result = kernelevolve.optimize(
        spec,
        budget=Budget(max_evaluations=1),
        operators=["one_kernel"],
        run_root=tmp_path,
        overrides=[*FAST, "+search.operator_options.one_kernel.label=mine"],
    )
    assert result.found and result.results["best"]["operator"] == "one_kernel"
    assert result.results["best"]["metadata"]["label"] == "mine"
    (context,) = registered
    assert context.strict is True and context.run_dir == result.run_dir


def test_an_installed_packages_entry_point_registers_its_operator(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    class Point:
        name = "from_a_package"

        def load(self) -> Any:
            return lambda context, **options: OneKernel(context, **options)

    monkeypatch.setattr(
        importlib.metadata,
        "entry_points",
        lambda group: [Point()] if group == "kernelevolve.operators" else [],
    )
    try:
        assert load_entry_points() == ["from_a_package"]
        assert load_entry_points() == []  # once
        operator = OPERATORS.create("from_a_package", context=OperatorContext(strict=False), label="x")
        assert isinstance(operator, OneKernel) and operator.context.strict is False
    finally:
        OPERATORS._factories.pop("from_a_package", None)
