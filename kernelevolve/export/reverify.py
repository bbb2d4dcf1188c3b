"""Check a custom op's kernels once, when loaded, exactly as the search checked them.

The harness's inputs recipe and per-trial seeds (fresh ones), the platform's `correctness_trials`,
the spec's tolerance and `kernelevolve.eval.correctness`. Only the weights differ, on purpose: the op
serves any instance's weights, so it is checked with the module's own (or the spec's seeded ones),
perturbed, where the search sees the spec's seeded init alone. A mismatch disables that shape
(`on_mismatch="disable"`) or raises (`"raise"`).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernelevolve.export.custom_op import KernelOp

log = logging.getLogger(__name__)

ON_MISMATCH = ("disable", "raise")
NOT_APPLICABLE = "not applicable"


class KernelVerificationError(RuntimeError):
    """A kernel did not match the reference when re-verified on load."""


def _device(op: KernelOp) -> str | None:
    import torch

    if op.platform.device == "cpu":
        return "cpu"
    return "cuda" if torch.cuda.is_available() else None


def verify_kernels(
    op: KernelOp,
    config: int = 0,
    seed: int | None = None,
    trials: int | None = None,
    state: Sequence[Any] | None = None,
) -> dict[str, str]:
    """Check each served shape's kernel against the reference once; returns shape -> problem ('' if ok).

    `trials` defaults to the platform's `correctness_trials`, as in the search. `state` is the
    module's own parameters and buffers (default: the spec's seeded Model at each shape);
    floating ones are perturbed so a kernel that ignores or caches weights shows up.
    """
    from kernelevolve.verify import platform_settings

    device = _device(op)
    if device is None:
        log.info("%s: no %s device here; kernels not re-verified", op.qualname, op.platform.device)
        return {}
    base_seed = random.SystemRandom().randrange(1 << 30) if seed is None else seed
    if trials is None:
        trials = platform_settings(op.platform.name).correctness_trials
    outcome: dict[str, str] = {}
    for shape in [s for s in op._classes if (config, s) not in op.disabled]:
        problem = _verify_shape(op, shape, config, device, base_seed, trials, state)
        outcome[shape] = problem
        if not problem:
            continue
        op.disabled[(config, shape)] = problem
        if problem.startswith(NOT_APPLICABLE):  # e.g. a module whose weights fit another shape
            log.info("%s: kernel for shape %s unused: %s", op.qualname, shape, problem)
            continue
        log.warning("%s: kernel for shape %s disabled: %s", op.qualname, shape, problem)
        if op.on_mismatch == "raise":
            raise KernelVerificationError(f"{op.spec.name} at shape {shape}: {problem}")
    return outcome


def _verify_shape(
    op: KernelOp, shape: str, config: int, device: str, seed: int, trials: int, state: Sequence[Any] | None
) -> str:
    import torch

    from kernelevolve.eval import correctness, stages
    from kernelevolve.export.custom_op import ExportError
    from kernelevolve.specs import reference

    namespace = op._namespace(shape)
    index = [s.name for s in op.spec.shapes].index(shape)
    if state is None:
        model = reference.build_model(namespace.Model, namespace, op.seed, device, op.dtype, op.spec.mode)
        state = [*model.parameters(), *model.buffers()]
    torch.manual_seed(seed)
    weights = [
        (t.detach().to(device) * (0.5 + torch.rand_like(t, device=device)))
        if t.is_floating_point()
        else t.detach().to(device)
        for t in state
    ]
    try:
        # The harness's own input maker and trial seeds: inputs made, and checked, as in the search.
        verdict = correctness.check_correctness(
            lambda *x: op._reference_call(x, weights, config),
            lambda *x: op._kernel_call(shape, x, weights),
            stages.input_maker(namespace, device, op.dtype),
            [stages.trial_seed(seed, index, t) for t in range(trials)],
            op.spec.atol,
            op.spec.rtol,
        )
    except correctness.CandidateFailure as failure:
        return f"kernel raised {type(failure.original).__name__}: {failure.original}"
    except (reference.ReferenceSpecError, ExportError) as exc:
        return f"{NOT_APPLICABLE}: {exc}"
    return "" if verdict.ok else f"{verdict.check}: {verdict.feedback}"
