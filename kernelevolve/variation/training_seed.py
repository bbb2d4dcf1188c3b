"""Compiler seeds of a training spec: torch.compile's forward and backward as one candidate.

What `compiler_seed` proposes for a spec with a backward: Inductor's forward and backward programs at
every shape (`compiler/joint_capture.py`: AOTAutograd's joint graph, partitioned as torch.compile does),
written as an autograd.Function per shape (`compiler/render_training.py`) whose kernels the tuning
operator can retune pass by pass. As for forward seeds: library calls kept (permissive mode) and, where
every one has our own kernel, in their place (strict mode); none where the capture or the translation
fails, with an INFO line saying why.
"""

from __future__ import annotations

import logging
from typing import Any

from kernelevolve.search.interfaces import ProposalContext
from kernelevolve.specs.tracing import TRACING_LOCK
from kernelevolve.types import Candidate

log = logging.getLogger(__name__)


def training_seeds(ctx: ProposalContext, device: str, strict: bool, operator: str) -> list[Candidate]:
    from kernelevolve.variation.compiler.render import RenderError
    from kernelevolve.variation.compiler.render_training import render_training
    from kernelevolve.variation.compiler_seed import BACKEND, _tensor_core_twins

    pairs = capture_training_programs(ctx, device, operator)
    if not pairs:
        return []
    library = sorted({c for p in pairs for prog in (p.forward, p.backward) for c in prog.library_calls})
    variants = [True] if strict and library else [False]
    if library and not strict and _own_possible(library, pairs):
        variants.append(True)
    seeds = []
    for own_kernels in variants:
        if own_kernels and not _own_possible(library, pairs):
            log.info(
                "%s: no strict training seed for %s: no own kernel for %s", operator, ctx.spec.name, library
            )
            continue
        try:
            source, params = render_training(
                ctx.spec.reference_source, pairs, ctx.spec.name, device == "cpu", own_kernels
            )
        except RenderError as exc:
            log.info("%s: no training seed for %s: %s", operator, ctx.spec.name, exc)
            continue
        metadata: dict[str, Any] = {
            "params": params,
            "kernels": sum(len(p.forward.kernels) + len(p.backward.kernels) for p in pairs),
            "library_calls": [] if own_kernels else library,
            "own_kernels": own_kernels,
            "source": "inductor_joint",
            "inductor_config": {},
        }
        seeds.append(Candidate(source, BACKEND, operator, "seed", metadata=metadata))
        if device == "cuda":
            seeds.extend(_tensor_core_twins(source, metadata, operator))
    log.info("%s: %d training seed(s) for %s (forward + backward)", operator, len(seeds), ctx.spec.name)
    return seeds


def _own_possible(library: list[str], pairs: list[Any]) -> bool:
    from kernelevolve.variation.compiler.own_gemm import substitutable

    convolutions = all(
        p.forward.convolutions_substitutable and p.backward.convolutions_substitutable for p in pairs
    )
    return substitutable(tuple(library), convolutions)


def capture_training_programs(ctx: ProposalContext, device: str, operator: str) -> list[Any] | None:
    """Inductor's forward and backward programs at every shape, or None (logged) where one cannot be had."""
    from kernelevolve.eval.device_lock import hold_device
    from kernelevolve.variation.compiler.capture import CaptureError
    from kernelevolve.variation.compiler.joint_capture import capture_joint
    from kernelevolve.variation.compiler.program import Unsupported, parse
    from kernelevolve.variation.compiler.render_training import TrainingProgram
    from kernelevolve.variation.compiler_seed import _release_device_memory

    pairs = []
    for shape in ctx.spec.shapes:
        try:
            with TRACING_LOCK, hold_device(device):
                joint = capture_joint(ctx.spec, shape, device)
            pairs.append(
                TrainingProgram(
                    shape.name,
                    joint.input_shapes,
                    joint.graph_inputs,
                    joint.constants,
                    parse(joint.forward_code),
                    parse(joint.backward_code),
                    joint.outputs,
                    joint.saved,
                )
            )
        except (CaptureError, Unsupported) as exc:
            log.info("%s: no joint capture of %s at %s: %s", operator, ctx.spec.name, shape.name, exc)
            return None
        except Exception as exc:  # a bug or an Inductor surprise must not stop the search
            log.warning("%s: joint capture failed for %s: %s", operator, ctx.spec.name, exc, exc_info=True)
            return None
        finally:
            _release_device_memory(device)
    return pairs
