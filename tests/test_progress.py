"""Progress: phases with or without a count, the time a budget leaves instead of an ETA, log lines above
the bar, and the engine telling its phases in order."""

from __future__ import annotations

import io
import logging
import re
import sys
from pathlib import Path

import pytest

from kernelevolve.results.progress import Progress, SearchProgress
from kernelevolve.search.interfaces import ProposalContext
from kernelevolve.types import Candidate
from tests.instant_engine import InstantEvaluator, make_engine, softmax_spec


def _screen(stream: io.StringIO) -> list[str]:
    """What the bar drew, one redraw per entry."""
    return [part.strip() for part in re.split(r"[\r\n]", stream.getvalue()) if part.strip()]


def test_phases_count_and_show_the_time_left_not_an_eta(caplog: pytest.LogCaptureFixture) -> None:
    stream = io.StringIO()
    with caplog.at_level(logging.INFO, logger="kernelevolve.results.progress"), Progress(file=stream) as bar:
        bar.phase("timing the baselines")
        bar.phase("search", total=4, unit="evals", budget_s=300, done=1)
        bar.advance(note="best 1.20x vs eager")
        bar.advance()
    drawn = _screen(stream)
    assert any(line.startswith("timing the baselines: 00:0") for line in drawn)
    last = [line for line in drawn if line.startswith("search:")][-1]
    assert (
        "3/4 evals" in last and "best 1.20x vs eager" in last and re.search(r"at most [45]:\d\d left", last)
    )
    assert not any("it/s" in line or "eval/s" in line or "<" in line for line in drawn)  # no rate, no ETA
    assert [r.getMessage() for r in caplog.records] == ["timing the baselines", "search (1/4 evals done)"]


def test_nothing_is_drawn_when_off_or_not_a_terminal() -> None:
    stream = io.StringIO()
    with Progress(enabled=False, file=stream) as bar:
        bar.phase("search", total=3, unit="evals")
        bar.advance()
    assert stream.getvalue() == ""
    assert not Progress(enabled=True).shown or sys.stderr.isatty()  # pytest's stderr is no terminal


def test_console_log_lines_go_above_the_bar_while_it_is_shown() -> None:
    console = logging.StreamHandler(sys.stderr)
    logging.root.addHandler(console)
    try:
        with Progress(file=io.StringIO()) as bar:
            bar.phase("search", total=2, unit="evals")
            inside = list(logging.root.handlers)
        after = list(logging.root.handlers)
    finally:
        logging.root.removeHandler(console)
    assert console not in inside and any(type(h).__name__ == "_TqdmLoggingHandler" for h in inside)
    assert console in after and not any(type(h).__name__ == "_TqdmLoggingHandler" for h in after)


class _Seeder:
    name, arity = "seeder", 0

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        return [Candidate(f"# {tag}\n", "triton", self.name, "seed") for tag in ("a", "b", "c")]


class _Quick(InstantEvaluator):
    def measure(self, candidate: Candidate) -> tuple[float, float]:
        return 2.0, 0.01


def test_the_engine_tells_its_phases_and_each_report(tmp_path: Path) -> None:
    spec = softmax_spec()
    phases: list[str] = []
    stream = io.StringIO()
    with Progress(file=stream) as bar:
        shown = SearchProgress(bar, max_evaluations=3, wall_clock_s=None)
        engine = make_engine(
            tmp_path / "graph.jsonl", spec, _Quick(spec), [_Seeder()], {"max_evaluations": 3}
        )
        engine.on_phase = lambda name: (phases.append(name), shown.phase(name))  # type: ignore[func-returns-value]
        engine.on_report = shown.report
        engine.run()
    assert phases == ["baselines", "seeds", "search"]
    assert shown.evaluations == 3 and shown.best == pytest.approx(0.5)
    assert "search: 3/3 evals" in stream.getvalue() and "best 0.50x vs eager, last ok" in stream.getvalue()
