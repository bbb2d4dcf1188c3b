"""The compiler-seed operator: what torch.compile would run, as a candidate the search can tune.

Arity 0. For every benchmark shape of the spec, Inductor's code for the reference is captured (its
code generation only, nothing runs) and translated into one standalone Triton candidate with
per-kernel block sizes and warps as tunables. On a GPU platform this needs CUDA in the searching
process; on the CPU platform Inductor writes Triton for the interpreter. A reference Inductor cannot
translate (a kernel kind or host step not handled) gives no candidate and an INFO line saying why.
Candidates that keep Inductor's library calls (matmul, convolution) need permissive mode
(`platform.eval.strict=false`); strict mode rejects them statically, which costs one cheap report.
"""

from __future__ import annotations

import logging
from typing import Any

from kernelevolve.interfaces import ProposalContext
from kernelevolve.types import Candidate
from kernelevolve.variation.compiler.own_conv import CONVOLUTION
from kernelevolve.variation.tracing import TRACING_LOCK

log = logging.getLogger(__name__)

BACKEND = "triton"
# Tunables of our own GEMM and convolution that put fp32 dot products on tensor cores at near-fp32 accuracy.
TENSOR_CORE_PRECISION = {"MM_FP32_PRECISION": "tf32x3", "CONV_FP32_PRECISION": "tf32x3"}


class CompilerSeedOperator:
    name = "compiler_seed"
    arity = 0

    def __init__(self) -> None:
        self._cache: dict[str, list[Candidate]] = {}

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        if BACKEND not in ctx.backends:
            return []
        key = f"{ctx.spec.key}:{ctx.platform.name}"
        if key not in self._cache:
            self._cache[key] = self._generate(ctx)
        return [c for c in self._cache[key] if c.id not in ctx.graph]

    def _generate(self, ctx: ProposalContext) -> list[Candidate]:
        device = "cpu" if ctx.platform.device == "cpu" else "cuda"
        programs = _capture_programs(ctx, device, layout_optimization=True)
        if programs is None:
            return []
        seeds = self._seeds(ctx, programs, device, {})
        if device == "cuda" and any(CONVOLUTION in p.program.library_calls for p in programs):
            # Inductor wraps GPU convolutions in channels-last conversions, sometimes far slower than
            # the reference's own layout (KernelBench L1/83: 7.2 ms against eager's 1.4 ms): offer both.
            in_reference_layout = _capture_programs(ctx, device, layout_optimization=False)
            if in_reference_layout is not None:
                seeds += self._seeds(ctx, in_reference_layout, device, {"layout_optimization": False})
        return seeds

    def _seeds(
        self, ctx: ProposalContext, programs: list[Any], device: str, extra: dict[str, Any]
    ) -> list[Candidate]:
        from kernelevolve.variation.compiler.own_gemm import substitutable
        from kernelevolve.variation.compiler.render import RenderError, render

        library = tuple(sorted({c for p in programs for c in p.program.library_calls}))
        kernels = sum(len(p.program.kernels) for p in programs)
        # As Inductor has it (library calls kept: permissive mode), and, where its library calls are
        # matmuls and convolutions, with our Triton GEMM / convolution in their place (strict mode).
        own_possible = substitutable(library, all(p.program.convolutions_substitutable for p in programs))
        if kernels == 0 and not own_possible:  # Inductor only calls the library: nothing of ours to offer
            log.info("compiler_seed: no seed for %s: Inductor writes no Triton kernel for it", ctx.spec.name)
            return []
        # Where Inductor writes no kernel at all (a bare matmul or convolution), only our own version is new.
        variants = ([True] if kernels == 0 else [False, True]) if own_possible else [False]
        seeds = []
        for own_kernels in variants:
            try:
                source, params = render(
                    ctx.spec.reference_source, programs, ctx.spec.name, device == "cpu", own_kernels
                )
            except RenderError as exc:
                log.info("compiler_seed: no seed for %s: %s", ctx.spec.name, exc)
                return []
            except Exception as exc:
                log.warning("compiler_seed: rendering failed for %s: %s", ctx.spec.name, exc, exc_info=True)
                continue
            metadata = {
                "params": params,
                "kernels": kernels,
                "library_calls": [] if own_kernels else list(library),
                "own_kernels": own_kernels,
                "source": "inductor",
                **extra,
            }
            seeds.append(Candidate(source, BACKEND, self.name, "seed", metadata=metadata))
            if own_kernels and device == "cuda":
                seeds.extend(_tensor_core_twin(source, metadata, self.name))
        log.info(
            "compiler_seed: %d seed(s) for %s (%d kernels over %d shapes%s%s)",
            len(seeds),
            ctx.spec.name,
            kernels,
            len(programs),
            f"; library calls {', '.join(library)}" if library else "",
            "; Inductor's layout optimisation off" if extra.get("layout_optimization") is False else "",
        )
        return seeds


def _tensor_core_twin(source: str, metadata: dict[str, Any], operator: str) -> list[Candidate]:
    """The own-kernel seed with its fp32 GEMMs and convolutions on 3xTF32 tensor cores, as a seed of its
    own: exact-fp32 dot products run at FFMA rate, where the baselines' cuDNN runs TF32 (KernelBench's
    convolutions), and a small search budget rarely reaches that tunable by mutation."""
    from kernelevolve.variation.tunables import apply_values, find_tunables

    present = {t.name for t in find_tunables(source)} & set(TENSOR_CORE_PRECISION)
    if not present:
        return []
    twin = apply_values(source, {name: TENSOR_CORE_PRECISION[name] for name in present})
    extra = {"fp32_precision": "tf32x3"}
    return [Candidate(twin, BACKEND, operator, "seed", metadata={**metadata, **extra})]


def _capture_programs(ctx: ProposalContext, device: str, layout_optimization: bool) -> list[Any] | None:
    """Inductor's program at every shape of the spec, or None (logged) where one cannot be had."""
    from kernelevolve.variation.compiler.capture import CaptureError, capture
    from kernelevolve.variation.compiler.program import Unsupported, parse
    from kernelevolve.variation.compiler.render import ShapeProgram

    programs = []
    for shape in ctx.spec.shapes:
        try:
            with TRACING_LOCK:
                captured = capture(ctx.spec, shape, device, layout_optimization)
            programs.append(
                ShapeProgram(
                    shape.name,
                    captured.input_shapes,
                    captured.state_names,
                    parse(captured.code),
                    captured.graph_inputs,
                    captured.constants,
                )
            )
        except (CaptureError, Unsupported) as exc:
            log.info("compiler_seed: no seed for %s at %s: %s", ctx.spec.name, shape.name, exc)
            return None
        except Exception as exc:  # a bug or an Inductor surprise must not stop the search
            log.warning("compiler_seed: capture failed for %s: %s", ctx.spec.name, exc, exc_info=True)
            return None
        finally:
            _release_device_memory(device)
    return programs


def _release_device_memory(device: str) -> None:
    """After a capture: the model it built sits in reference cycles (Dynamo's traced graph), which
    only the cycle collector frees; on a GPU its parameters would stay allocated until then."""
    if device == "cuda":
        import gc

        import torch

        gc.collect()
        torch.cuda.empty_cache()
