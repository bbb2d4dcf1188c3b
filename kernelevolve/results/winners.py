"""Which nodes a finished search reports, once their confirmations are in.

The search ranks candidates on settled timings of a few calls, so the order of two whose times are close
is within what one such measurement can tell; the winner's confirmation (`app.confirm_winners`: every
timed call, no settling) may read it slower than a runner-up timed (experiments/sample_sweep_h200/run_11).
So a runner-up within `RUNNER_UP_WITHIN` of the winner is confirmed beside it, and the one whose
confirmation is faster is reported: either figure is a full measurement of the kernel reported with it.

A winner is also checked on inputs from each other distribution its spec lists
(`KernelSpec.input_distributions`, specs/input_distributions.py), each with a fresh seed;
`with_distribution_checks` folds those checks into its confirmation, which then fails where one of them
did, so a kernel that is only right for standard-normal inputs is never the one reported.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from kernelevolve.results.outputs import confirmed_fitness
from kernelevolve.search.graph import Node, SearchGraph
from kernelevolve.specs.input_distributions import (
    FAILED,
    NORMAL,
    PASSED,
    UNCHECKED,
    distribution_flag,
    distribution_seed,
)
from kernelevolve.types import Baseline, Candidate, EvalReport, EvalRequest, EvalSettings, KernelSpec, Status

# A runner-up whose search speedup is within this factor of the winner's is confirmed beside it.
RUNNER_UP_WITHIN = 1.05
# Timed calls of a winner's check on another input distribution: that check is for correctness.
DISTRIBUTION_CHECK_TIMING_TRIALS = 2
# Nodes further down the ranking confirmed, one after another, in place of a winner that failed on an
# input distribution, before the run reports no winner of that kind.
MAX_REPLACEMENTS = 3


def contenders(graph: SearchGraph, winner: Node | None, accepts: Callable[[Node], bool]) -> list[Node]:
    """The winner, and the next-best node `accepts` takes where its search speedup is within
    RUNNER_UP_WITHIN of the winner's; nothing where there is no winner."""
    if winner is None or winner.fitness is None:
        return []
    runner_up = next((n for n in graph.top(len(graph)) if n.id != winner.id and accepts(n)), None)
    if runner_up is None or runner_up.fitness is None:
        return [winner]
    if runner_up.fitness.objective * RUNNER_UP_WITHIN < winner.fitness.objective:
        return [winner]
    return [winner, runner_up]


def reported_winner(
    nodes: list[Node], confirmations: Mapping[str, EvalReport], baselines: Mapping[str, Baseline]
) -> Node | None:
    """Of `nodes` (the winner first), the one whose passing confirmation scores best; the winner where
    none passed (it is then reported with its failed or missing confirmation, as before)."""
    confirmed = [
        (fitness, -index, node)
        for index, node in enumerate(nodes)
        if (fitness := confirmed_fitness(node, dict(baselines), confirmations.get(node.id))) is not None
    ]
    if not confirmed:
        return nodes[0] if nodes else None
    return max(confirmed, key=lambda entry: entry[:2])[2]


def with_distribution_checks(
    confirmation: EvalReport, checks: Mapping[str, EvalReport | None], seed: int
) -> EvalReport:
    """`confirmation` (the winner's check on the reference's own inputs) with its checks on other input
    distributions (name -> report; None where the check could not run) folded in: a flag per distribution
    (`failed_distribution:large`, `passed_distribution:uniform`, `unchecked_distribution:...`) and, where
    the confirmation passed but a check failed, the first failing check's status, error and feedback
    (its times stay the confirmation's, unused), so the confirmation fails. `seed`: the confirmation's,
    from which each check's fresh seed was derived (`distribution_seed`), named in the feedback."""
    flags = list(confirmation.flags)
    failed: list[tuple[str, EvalReport]] = []
    for name, check in checks.items():
        # A check the harness could not complete (out of device memory, its own error, a dead worker) says
        # nothing about the kernel: unchecked, not failed.
        verdict = check is not None and not _harness_trouble(check)
        outcome = UNCHECKED if not verdict or check is None else PASSED if check.ok else FAILED
        flags.append(distribution_flag(outcome, name))
        if outcome == FAILED and check is not None:
            failed.append((name, check))
    if not failed or not confirmation.ok:
        return dataclasses.replace(confirmation, flags=tuple(flags))
    name, check = failed[0]
    names = ", ".join(n for n, _ in failed)
    return dataclasses.replace(
        confirmation,
        status=check.status,
        error_name=check.error_name or "failed_distribution",
        feedback=(
            f"wrong on {names} inputs; {name} (seed {distribution_seed(seed, name)}): "
            f"{check.status.value}: {check.feedback}"
        ),
        max_abs_error=check.max_abs_error,
        flags=tuple(flags),
    )


def _harness_trouble(report: EvalReport) -> bool:
    return (
        "harness_error" in report.flags
        or report.status is Status.WORKER_CRASH
        or ("OutOfMemory" in report.error_name or "out of memory" in report.feedback)
    )


def distribution_check_requests(
    candidate: Candidate, spec: KernelSpec, platform: str, confirming: EvalSettings
) -> dict[str, EvalRequest]:
    """A check of `candidate` on each of `spec.input_distributions` but the standard normal (the one every
    evaluation uses), by distribution name."""
    return {
        name: EvalRequest(candidate, spec, platform, distribution_check_settings(confirming, name))
        for name in spec.input_distributions
        if name != NORMAL
    }


def distribution_check_settings(confirming: EvalSettings, distribution: str) -> EvalSettings:
    """The settings of a winner's check on `distribution`'s inputs: a fresh seed, and correctness above
    all (two timed calls, no reference outputs kept: they are of no later check's inputs)."""
    return dataclasses.replace(
        confirming,
        input_distribution=distribution,
        seed=distribution_seed(confirming.seed, distribution),
        timing_trials=DISTRIBUTION_CHECK_TIMING_TRIALS,
        warmup_trials=1,
        settle_relative_halfwidth=0.0,
        race_margin=0.0,
        reference_cache_mb=0.0,
    )
