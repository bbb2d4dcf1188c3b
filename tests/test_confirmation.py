"""Winners' confirmations: evaluated once more with every timed call, their times are the reported ones."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from kernelevolve.app import WinnerConfirmer, confirm_winners
from kernelevolve.bench.sweep.run import record_from_results
from kernelevolve.platforms import load_platform
from kernelevolve.results.outputs import build_results, summary_table
from kernelevolve.results.winners import (
    MAX_REPLACEMENTS,
    contenders,
    reported_winner,
    with_distribution_checks,
)
from kernelevolve.search.graph import SearchGraph
from kernelevolve.types import (
    Baseline,
    Candidate,
    EvalReport,
    EvalRequest,
    EvalSettings,
    FitnessValue,
    KernelSpec,
    Status,
    TimingStats,
)


def _stats(ms: float, trials: int = 30) -> TimingStats:
    return TimingStats(ms, ms, 0.0, ms, ms, trials, "cuda_event")


SPEC = KernelSpec("tiny", "")
BASELINES = {"default": Baseline(eager=_stats(2.0, 100), compiled=_stats(1.0, 100))}


def _graph() -> tuple[SearchGraph, Candidate]:
    """One winner, measured by the search at 0.5 ms (4x eager, 2x torch.compile)."""
    graph = SearchGraph()
    winner = Candidate("# winner\n", "triton", "tune")
    graph.add_candidate(winner)
    graph.record(
        winner.id,
        EvalReport(winner.id, Status.OK, latency={"default": _stats(0.5)}),
        FitnessValue(True, 4.0, 2.0),
    )
    return graph, winner


def _results(
    graph: SearchGraph, confirmations: dict[str, EvalReport], winners: tuple[Any, Any] | None = None
) -> dict[str, Any]:
    return build_results(
        spec=SPEC,
        platform="h200",
        graph=graph,
        baselines=BASELINES,
        stop_reason="max_evaluations",
        elapsed_s=1.0,
        evaluations_this_session=1,
        confirmations=confirmations,
        winners=winners,
    )


def test_a_passing_confirmation_gives_the_reported_times_and_keeps_the_searchs() -> None:
    graph, winner = _graph()
    confirmed = EvalReport(winner.id, Status.OK, latency={"default": _stats(0.8, 100)})
    results = _results(graph, {winner.id: confirmed})
    best = results["best"]
    assert best["speedup_vs_eager"] == 2.5 and best["speedup_vs_compile"] == 1.25  # 2.0 / 0.8, 1.0 / 0.8
    assert best["shapes"][0]["best_ms"] == 0.8
    assert best["search"] == {
        "speedup_vs_eager": 4.0,
        "speedup_vs_compile": 2.0,
        "median_ms": {"default": 0.5},
    }
    assert best["confirmation"]["used"] is True and best["confirmation"]["timed_calls"] == {"default": 100}
    assert results["best_by_backend"]["triton"]["speedup_vs_eager"] == 2.5  # the same node, its confirmation
    assert "confirmed: checked and timed again with 100 timed calls" in summary_table(results)
    record = record_from_results(results)
    assert (
        record["best_ms"] == 0.8
        and record["speedup_vs_eager"] == 2.5
        and record["confirmation_status"] == "ok"
    )


def test_a_failing_confirmation_is_reported_and_the_searchs_times_stay() -> None:
    graph, winner = _graph()
    flaky = EvalReport(winner.id, Status.INCORRECT, feedback="incorrect: 3 values differ\nmore")
    results = _results(graph, {winner.id: flaky})
    best = results["best"]
    assert best["speedup_vs_eager"] == 4.0 and best["shapes"][0]["best_ms"] == 0.5
    assert best["confirmation"] == {
        "status": "incorrect",
        "used": False,
        "timed_calls": {},
        "max_abs_error": None,
        "feedback": "incorrect: 3 values differ",
        "input_distributions": {},  # no checks on other input distributions in this report
    }
    assert (
        "warning: the best failed its confirmation (incorrect: incorrect: 3 values differ)"
        in summary_table(results)
    )
    assert record_from_results(results)["confirmation_status"] == "incorrect"
    unconfirmed = _results(graph, {})["best"]  # results from before confirmations, or none could run
    assert unconfirmed["confirmation"] is None and "confirmed" not in summary_table(_results(graph, {}))


class _Recorder:
    """An evaluator that answers every request at once and keeps what it was asked."""

    capacity = 2

    def __init__(self) -> None:
        self.requests: list[EvalRequest] = []

    def submit(self, request: EvalRequest) -> Future[EvalReport]:
        self.requests.append(request)
        done: Future[EvalReport] = Future()
        done.set_result(EvalReport(request.candidate.id, Status.OK, latency={"default": _stats(0.8, 100)}))
        return done


def test_confirmations_time_every_call_once_per_distinct_winner() -> None:
    graph, winner = _graph()
    evaluator = _Recorder()
    settings = EvalSettings(settle_relative_halfwidth=0.01, race_margin=1.5, timing_trials=100)
    node = graph.node(winner.id)
    confirmations = confirm_winners(evaluator, [node, node, None], SPEC, load_platform("h200"), settings)  # type: ignore[arg-type]
    assert list(confirmations) == [winner.id]
    # one confirmation on the reference's own inputs, then one check per other distribution of the spec
    assert [r.settings.input_distribution for r in evaluator.requests] == list(SPEC.input_distributions)
    request, *checks = evaluator.requests
    assert request.settings.settle_relative_halfwidth == 0.0 and request.settings.race_margin == 0.0
    assert request.incumbent_ms is None and request.settings.timing_trials == 100
    assert request.settings.seed == settings.seed
    assert all(c.settings.seed != settings.seed and c.settings.timing_trials == 2 for c in checks)
    assert all(c.settings.race_margin == 0.0 and c.settings.reference_cache_mb == 0.0 for c in checks)
    report = confirmations[winner.id]
    assert report.ok and report.flags == tuple(
        f"passed_distribution:{r.settings.input_distribution}" for r in checks
    )
    results = _results(graph, confirmations)
    assert results["best"]["confirmation"]["used"] is True and results["rejected_winners"] == []
    assert "also correct on uniform, heavy_tailed, large inputs" in summary_table(results)


def _two_close_candidates() -> tuple[SearchGraph, Candidate, Candidate]:
    """A winner timed at 0.50 ms in search and a runner-up at 0.51 ms (within RUNNER_UP_WITHIN)."""
    graph, winner = _graph()
    runner_up = Candidate("# runner-up\n", "triton", "tune")
    graph.add_candidate(runner_up)
    graph.record(
        runner_up.id,
        EvalReport(runner_up.id, Status.OK, latency={"default": _stats(0.51)}),
        FitnessValue(True, 2.0 / 0.51, 1.0 / 0.51),
    )
    return graph, winner, runner_up


def test_a_runner_up_close_behind_is_confirmed_and_reported_where_its_confirmation_is_faster() -> None:
    """L1/90 in the H200's sample run 11: the winner timed 2.19 ms in search and 2.52 confirmed, a
    runner-up 2.205 in search; the faster confirmation is what the user gets."""
    graph, winner, runner_up = _two_close_candidates()
    nodes = contenders(graph, graph.node(winner.id), lambda node: True)
    assert [n.id for n in nodes] == [winner.id, runner_up.id]
    confirmations = {
        winner.id: EvalReport(winner.id, Status.OK, latency={"default": _stats(0.6, 100)}),
        runner_up.id: EvalReport(runner_up.id, Status.OK, latency={"default": _stats(0.52, 100)}),
    }
    chosen = reported_winner(nodes, confirmations, BASELINES)
    assert chosen is not None and chosen.id == runner_up.id
    results = _results(graph, confirmations, winners=(chosen, chosen))
    assert results["best"]["id"] == runner_up.id and results["best"]["shapes"][0]["best_ms"] == 0.52
    assert results["best_strict"]["id"] == runner_up.id
    # where the winner's confirmation is the faster one, or the runner-up's failed, the winner stays
    confirmations[winner.id] = EvalReport(winner.id, Status.OK, latency={"default": _stats(0.5, 100)})
    assert reported_winner(nodes, confirmations, BASELINES) is nodes[0]
    confirmations[winner.id] = EvalReport(winner.id, Status.OK, latency={"default": _stats(0.6, 100)})
    confirmations[runner_up.id] = EvalReport(runner_up.id, Status.INCORRECT, feedback="incorrect")
    assert reported_winner(nodes, confirmations, BASELINES) is nodes[0]
    # a flaky winner gives way to a runner-up that passed; with neither confirmed the winner is reported
    confirmations[winner.id] = EvalReport(winner.id, Status.INCORRECT, feedback="incorrect")
    confirmations[runner_up.id] = EvalReport(runner_up.id, Status.OK, latency={"default": _stats(0.7, 100)})
    assert reported_winner(nodes, confirmations, BASELINES) is nodes[1]
    assert reported_winner(nodes, {}, BASELINES) is nodes[0]


def test_a_runner_up_further_behind_or_of_the_other_kind_is_not_confirmed() -> None:
    graph, winner, runner_up = _two_close_candidates()
    assert [n.id for n in contenders(graph, graph.node(winner.id), lambda n: n.id != runner_up.id)] == [
        winner.id
    ]
    far = Candidate("# far behind\n", "triton", "tune")
    graph.add_candidate(far)
    graph.record(
        far.id, EvalReport(far.id, Status.OK, latency={"default": _stats(0.6)}), FitnessValue(True, 2 / 0.6)
    )
    assert [
        n.id for n in contenders(graph, graph.node(winner.id), lambda n: n.id == far.id or n.id == winner.id)
    ] == [winner.id]
    assert contenders(graph, None, lambda n: True) == []
    # a winner with no runner-up of its kind is confirmed alone
    assert contenders(graph, graph.node(winner.id), lambda n: n.id == winner.id) == [graph.node(winner.id)]


class _WrongOn:
    """An evaluator that answers at once: OK, but wrong for the candidates in `wrong` on the inputs of
    the distribution named with them, and flaky (wrong on the reference's own inputs) for `flaky`."""

    capacity = 4

    def __init__(self, wrong: dict[str, str], flaky: frozenset[str] = frozenset()) -> None:
        self.wrong = wrong
        self.flaky = flaky
        self.requests: list[EvalRequest] = []

    def submit(self, request: EvalRequest) -> Future[EvalReport]:
        self.requests.append(request)
        cid, distribution = request.candidate.id, request.settings.input_distribution
        if self.wrong.get(cid) == distribution or (cid in self.flaky and distribution == "normal"):
            report = EvalReport(cid, Status.INCORRECT, "mismatch", f"wrong on {distribution}")
        else:
            report = EvalReport(cid, Status.OK, latency={"default": _stats(0.8, 100)})
        done: Future[EvalReport] = Future()
        done.set_result(report)
        return done


def _ranked(*times_ms: float) -> tuple[SearchGraph, list[Candidate]]:
    """Candidates timed in search at these times (the first the fastest), none within RUNNER_UP_WITHIN."""
    graph, candidates = SearchGraph(), []
    for index, ms in enumerate(times_ms):
        candidate = Candidate(f"# kernel {index}\n", "triton", "tune")
        graph.add_candidate(candidate)
        graph.record(
            candidate.id,
            EvalReport(candidate.id, Status.OK, latency={"default": _stats(ms)}),
            FitnessValue(True, 2.0 / ms, 1.0 / ms),
        )
        candidates.append(candidate)
    return graph, candidates


def _choose(graph: SearchGraph, evaluator: Any, winner_id: str) -> tuple[Any, dict[str, EvalReport]]:
    platform, settings = load_platform("h200"), EvalSettings()
    nodes = contenders(graph, graph.node(winner_id), lambda node: True)
    confirmations = confirm_winners(evaluator, nodes, SPEC, platform, settings)
    confirmer = WinnerConfirmer(evaluator, graph, confirmations, SPEC, platform, settings, BASELINES)
    return confirmer.reported(nodes, lambda node: True), confirmations


def test_a_winner_wrong_on_large_inputs_gives_way_to_the_next_correct_one() -> None:
    graph, (winner, second, third) = _ranked(0.5, 0.6, 0.7)
    evaluator = _WrongOn({winner.id: "large"})
    chosen, confirmations = _choose(graph, evaluator, winner.id)
    assert chosen is not None and chosen.id == second.id  # confirmed after the winner was found wrong
    assert "failed_distribution:large" in confirmations[winner.id].flags
    assert confirmations[second.id].ok and third.id not in confirmations
    results = _results(graph, confirmations, winners=(chosen, chosen))
    assert results["best"]["id"] == second.id and results["best"]["confirmation"]["used"] is True
    (rejected,) = results["rejected_winners"]
    assert rejected["id"] == winner.id and "failed_distribution:large" in rejected["flags"]
    assert rejected["confirmation"]["status"] == "incorrect" and rejected["confirmation"]["used"] is False
    assert results["best_by_backend"]["triton"]["id"] == second.id  # the rejected winner is no backend's best
    table = summary_table(results)
    assert (
        f"warning: {winner.id} (4.00x vs eager in search) is wrong on large inputs and is not reported"
        in table
    )
    assert f"best {second.id} " in table


def test_replacements_skip_flaky_and_wrong_nodes_and_stop_at_the_limit() -> None:
    graph, candidates = _ranked(0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    winner, second, third, fourth = candidates[:4]
    # the second is flaky, the third wrong on uniform inputs: the fourth is the one reported
    evaluator = _WrongOn({winner.id: "heavy_tailed", third.id: "uniform"}, frozenset({second.id}))
    chosen, confirmations = _choose(graph, evaluator, winner.id)
    assert chosen is not None and chosen.id == fourth.id
    assert (
        not confirmations[second.id].ok
        and confirmations[third.id].flags.count("failed_distribution:uniform") == 1
    )
    # where every node tried is wrong, no winner is reported (and no more than MAX_REPLACEMENTS are tried)
    everyone = _WrongOn({c.id: "large" for c in candidates})
    chosen, confirmations = _choose(graph, everyone, winner.id)
    assert chosen is None and len(confirmations) == 1 + MAX_REPLACEMENTS
    results = _results(graph, confirmations, winners=(None, None))
    assert results["best"] is None and len(results["rejected_winners"]) == 1 + MAX_REPLACEMENTS
    assert "no correct kernel found" in summary_table(results)


def test_a_flaky_winner_without_distribution_failures_is_still_reported_as_before() -> None:
    graph, (winner, _second) = _ranked(0.5, 0.6)
    chosen, confirmations = _choose(graph, _WrongOn({}, frozenset({winner.id})), winner.id)
    assert chosen is not None and chosen.id == winner.id and not confirmations[winner.id].ok
    assert confirmations[winner.id].error_name == "mismatch"  # the confirmation's own failure, unchanged


def test_distribution_checks_fold_into_the_confirmation() -> None:
    confirmation = EvalReport("k", Status.OK, latency={"default": _stats(0.8, 100)}, flags=("reverified",))
    passed = EvalReport("k", Status.OK)
    crashed = EvalReport("k", Status.RUNTIME_ERROR, "IllegalAddress", "an illegal memory access", 0.0)
    folded = with_distribution_checks(
        confirmation, {"uniform": passed, "large": crashed, "small": None}, seed=3
    )
    assert folded.status is Status.RUNTIME_ERROR and folded.error_name == "IllegalAddress"
    assert folded.flags == (
        "reverified",
        "passed_distribution:uniform",
        "failed_distribution:large",
        "unchecked_distribution:small",
    )
    assert folded.feedback.startswith("wrong on large inputs; large (seed ")
    assert folded.latency == confirmation.latency  # kept for the record, unused: it failed
    # a confirmation that failed on its own inputs keeps its own failure; the checks only add flags
    flaky = EvalReport("k", Status.INCORRECT, "mismatch", "3 values differ")
    assert with_distribution_checks(flaky, {"large": crashed}, seed=3).feedback == "3 values differ"
    # nothing checked: the confirmation as it was
    assert with_distribution_checks(confirmation, {}, seed=3) == confirmation
