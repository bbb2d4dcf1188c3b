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

import dataclasses
import logging
from collections.abc import Callable, Collection, Mapping
from typing import Any

from kernelevolve.search.interfaces import ProposalContext
from kernelevolve.specs.tracing import TRACING_LOCK
from kernelevolve.types import Candidate
from kernelevolve.variation.compiler.capture import INDUCTORS_OWN, CaptureSettings
from kernelevolve.variation.compiler.own_attention import ATTENTION_OPS, MAX_HEAD_DIM
from kernelevolve.variation.compiler.own_conv import CONVOLUTION

log = logging.getLogger(__name__)

BACKEND = "triton"
# Tunables of our own GEMM and convolution that put fp32 dot products on tensor cores, and their values
# that do: 3xTF32 (about 22 bits of mantissa) and 3xBF16 (about 16 bits, at twice the bf16 rate: on Hopper
# three bf16 passes cost about 1.5 TF32 passes). In a CPU simulation of KernelBench's Linear layers (K up to
# 32768) 3xBF16 used at most 10% of the 1e-4 tolerance, 3xTF32 well under 1%.
PRECISION_TUNABLES = (
    "MM_FP32_PRECISION",
    "CONV_FP32_PRECISION",
    "LIBRARY_CONV_FP32_PRECISION",
    "LIBRARY_MM_FP32_PRECISION",
)
# One TF32 pass: what PyTorch's eager runs convolutions in by default (cudnn.allow_tf32), so only the
# convolution tunables offer it, and its twins are kept only where eager's own output at that precision
# met the tolerance (by_promise); the candidates' check decides as always.
EAGER_CONV_PRECISION = "tf32"
# "tf32_bf16": cuDNN's convolutions and cuBLAS's matmuls in one TF32 and one BF16 pass
# (compiler/library_conv.py, compiler/library_gemm.py); "tf32x3_one_pass": cuDNN's convolutions in one TF32
# pass over tripled input channels (library_conv.py)
LIBRARY_CONV_ONE_PASS = "tf32x3_one_pass"
TENSOR_CORE_PRECISIONS = ("tf32_bf16", LIBRARY_CONV_ONE_PASS, "tf32x3", "bf16x3", EAGER_CONV_PRECISION)
# Eager's TF32 output meeting the tolerance is evidence for our own one-pass TF32 convolution only where
# cuDNN ran TF32 algorithms: where eager's default run is no faster than its exact one, it ran none
# (threshold from experiments/full_sweep_h200).
OWN_TF32_MIN_EXACT_SLOWDOWN = 1.5


class CompilerSeedOperator:
    name = "compiler_seed"
    arity = 0

    def __init__(self, strict: bool = False) -> None:
        # Strict runs reject library calls statically: seeds that keep them would only spend evaluations.
        self.strict = strict
        self._cache: dict[str, list[Candidate]] = {}

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        if BACKEND not in ctx.backends:
            return []
        key = f"{ctx.spec.key}:{ctx.platform.name}"
        if key not in self._cache:
            self._cache[key] = self._generate(ctx)
        return [c for c in self._cache[key] if c.id not in ctx.graph]

    def _generate(self, ctx: ProposalContext) -> list[Candidate]:
        device = capture_device(ctx)
        if ctx.spec.backward is not None:  # a training spec: torch.compile's forward and backward
            from kernelevolve.variation.training_seed import training_seeds

            return training_seeds(ctx, device, self.strict, self.name)
        seeds = self._seeds_of_each_capture(
            ctx, device, lambda settings: capture_programs(ctx, device, settings), {}
        )
        return seeds or []

    def _seeds_of_each_capture(
        self,
        ctx: ProposalContext,
        device: str,
        programs_in: Callable[[CaptureSettings], list[Any] | None],
        extra: dict[str, Any],
    ) -> list[Candidate] | None:
        """Seeds from `programs_in(settings)`: Inductor's own capture and, where they differ from it, the
        captures with attention as matmuls and (GPU convolutions) in the reference's layout, in order of
        promise; None (logged by the capture) where Inductor's program cannot be had at all."""
        programs = programs_in(INDUCTORS_OWN)
        if programs is None:
            return None
        captures = [(INDUCTORS_OWN, programs)]
        if fused_attention(programs):
            # The fused op runs in exact fp32 (KernelBench L1/97, head size 1024: eager 24.2 ms on the
            # H200) and our attention kernel takes head sizes up to MAX_HEAD_DIM; as matmuls, the library's
            # TF32+BF16 split or our GEMM can do most of its work (only where the math backend took).
            as_matmuls = CaptureSettings(attention_as_matmuls=True)
            matmul_programs = programs_in(as_matmuls)
            if matmul_programs is not None and not fused_attention(matmul_programs):
                captures.append((as_matmuls, matmul_programs))
        seeds = []
        for settings, captured in captures:
            seeds += self._seeds(ctx, captured, device, {**extra, **settings.recorded()})
            if device == "cuda" and any(CONVOLUTION in p.program.library_calls for p in captured):
                # Inductor wraps GPU convolutions in channels-last conversions, sometimes far slower than
                # the reference's own layout (KernelBench L1/83: 7.2 ms against eager's 1.4 ms): offer both.
                reference_layout = dataclasses.replace(settings, layout_optimization=False)
                in_reference_layout = programs_in(reference_layout)
                if in_reference_layout is not None:
                    seeds += self._seeds(
                        ctx, in_reference_layout, device, {**extra, **reference_layout.recorded()}
                    )
        return by_promise(
            seeds,
            exact_fp32_slowdown(ctx.graph),
            eager_precision_passes(ctx.graph),
            matmul_attention_first=attention_head_dim(programs) > MAX_HEAD_DIM,
        )

    def _seeds(
        self, ctx: ProposalContext, programs: list[Any], device: str, extra: dict[str, Any]
    ) -> list[Candidate]:
        from kernelevolve.variation.compiler.render import RenderError

        library = library_calls(programs)
        kernels = sum(len(p.program.kernels) for p in programs)
        # As Inductor has it (library calls kept: permissive mode), and, where its library calls are
        # matmuls and convolutions, with our Triton GEMM / convolution in their place (strict mode).
        own_possible = own_kernels_possible(programs)
        if kernels == 0 and not own_possible:  # Inductor only calls the library: nothing of ours to offer
            head_dim = attention_head_dim(programs)
            log.info(
                "compiler_seed: no seed for %s: Inductor writes no Triton kernel for it%s",
                ctx.spec.name,
                f"; our attention kernel takes head sizes up to {MAX_HEAD_DIM}, not {head_dim}"
                if head_dim > MAX_HEAD_DIM
                else "",
            )
            return []
        # Where Inductor writes no kernel at all (a bare matmul or convolution), only our own version is new.
        variants = ([True] if kernels == 0 else [False, True]) if own_possible else [False]
        if self.strict and library:
            variants = [v for v in variants if v]
            if not variants:
                log.info(
                    "compiler_seed: no seed for %s in strict mode: no own kernel for %s",
                    ctx.spec.name,
                    ", ".join(library),
                )
                return []
        seeds = []
        for own_kernels in variants:
            try:
                source, metadata = render_variant(ctx, programs, device, own_kernels)
            except RenderError as exc:
                log.info("compiler_seed: no seed for %s: %s", ctx.spec.name, exc)
                return []
            except Exception as exc:
                log.warning("compiler_seed: rendering failed for %s: %s", ctx.spec.name, exc, exc_info=True)
                continue
            metadata.update(extra)
            seeds.append(Candidate(source, BACKEND, self.name, "seed", metadata=metadata))
            if device == "cuda":  # own kernels: 3xTF32 and 3xBF16; cuDNN and cuBLAS calls: TF32+BF16
                seeds.extend(_tensor_core_twins(source, metadata, self.name))
        captured_with = CaptureSettings.from_metadata(extra).recorded()
        log.info(
            "compiler_seed: %d seed(s) for %s (%d kernels over %d shapes%s%s)",
            len(seeds),
            ctx.spec.name,
            kernels,
            len(programs),
            f"; library calls {', '.join(library)}" if library else "",
            f"; captured with {captured_with}" if captured_with else "",
        )
        return seeds


# Three TF32 passes (and the hi/lo splits) beat one exact fp32 pass only where TF32 is more than about
# three times faster; in whole networks it is not (experiments/full_sweep_h200).
THREE_PASS_BREAK_EVEN = 3.0
# (tunable, precision) pairs that tuning reaches but no seed twin starts from (_tensor_core_twins)
TUNING_ONLY_PRECISIONS = frozenset({("LIBRARY_CONV_FP32_PRECISION", "tf32x3")})
# The cost of cuDNN's split convolutions in TF32 passes, against the exact call's `exact_fp32_slowdown`:
# "tf32_bf16" is a TF32 pass and a BF16 pass over twice the input channels, at twice TF32's rate. The
# one-pass 3xTF32 does three passes' tensor-core work but writes one output where the others write two or
# three and add them: where the output dominates (L2/5's 2.15 GB) it may cost less than two passes, where
# the arithmetic does, three. Counted as two until measured, so it follows the TF32+BF16 split (stable sort).
LIBRARY_SPLIT_PASSES = {"tf32_bf16": 2.0, LIBRARY_CONV_ONE_PASS: 2.0, "tf32x3": THREE_PASS_BREAK_EVEN}
# cuDNN's split twins start with its algorithm timing on (library_conv's LIBRARY_CONV_BENCHMARK; tuning can
# turn it off): its heuristics pick poorly for the split's doubled or tripled input channels, and a budget
# full of seeds rarely reaches that tunable by tuning (experiments/sample_sweep_h200/run_12).
TIMED_LIBRARY_CONV_PRECISIONS = frozenset({"tf32_bf16", LIBRARY_CONV_ONE_PASS})
LIBRARY_CONV_TIMING_TUNABLE = "LIBRARY_CONV_BENCHMARK"


def exact_fp32_slowdown(graph: Any) -> float | None:
    """How much slower the reference runs with exact fp32 convolutions than in PyTorch's default
    (TF32), from the baselines the engine recorded before seeding: the smallest ratio over shapes.
    None where eager was not timed at exact precision (no convolution module, or a CPU platform)."""
    ratios = [
        b.eager_exact.median_ms / b.eager.median_ms
        for b in (graph.recorded_baselines() or {}).values()
        if b.eager_exact and b.eager.median_ms
    ]
    return min(ratios) if ratios else None


def eager_precision_passes(graph: Any) -> bool | None:
    """Whether eager at PyTorch's default precision (TF32 convolutions) met the tolerance at every shape
    where it differs from exact fp32, from the baselines the engine recorded before seeding. None where
    nothing says (no convolution module, a CPU platform, or no baselines yet)."""
    verdicts = [
        b.eager_within_tolerance for b in (graph.recorded_baselines() or {}).values() if b.eager_exact
    ]
    if not verdicts or None in verdicts:
        return None
    return all(verdicts)


def own_tf32_promising(eager_passes: bool | None, exact_slowdown: float | None) -> bool:
    """Whether our own convolutions in one TF32 pass are worth a try: eager's TF32 output met the
    tolerance, and eager ran TF32 algorithms at all (see OWN_TF32_MIN_EXACT_SLOWDOWN)."""
    return bool(eager_passes) and exact_slowdown is not None and exact_slowdown >= OWN_TF32_MIN_EXACT_SLOWDOWN


def one_pass_worth(own_kernels: bool, eager_passes: bool | None, exact_slowdown: float | None) -> bool:
    """Whether convolutions in one TF32 pass are worth a seed or a tuning step: cuDNN's where eager's own
    TF32 output met the tolerance, ours where `own_tf32_promising` too (by_promise, tuning)."""
    return own_tf32_promising(eager_passes, exact_slowdown) if own_kernels else bool(eager_passes)


def by_promise(
    seeds: list[Candidate],
    exact_slowdown: float | None = None,
    eager_passes: bool | None = None,
    matmul_attention_first: bool = False,
) -> list[Candidate]:
    """The seeds worth evaluating, in the order they are worth it, layouts interleaved.

    Seeds of the capture with attention as matmuls come after all the others, each group in the order
    below: the fused op's seeds keep the score matrix on chip (ours) or are eager's own call. Where the
    fused op's head size is beyond our attention kernel (`matmul_attention_first`), they come first: the
    fused op then has no own seed, and its library call runs in exact fp32 (KernelBench L1/97, 24.2 ms
    on the H200), where the matmuls' TF32+BF16 split leads the order below.

    Where eager's own TF32 convolutions met the tolerance (`eager_passes`: see `eager_precision_passes`),
    Inductor's program with its convolutions in one TF32 pass goes first: eager's precision at
    Inductor's speed (experiments/full_sweep_h200). Our own kernels come next, so that a
    strict result is found within a small budget: convolutions in one TF32 pass where that is promising
    (`own_tf32_promising`), then on 3xBF16 tensor cores; then Inductor's program with exact cuDNN
    calls, which one TF32 pass beats wherever it passes (own seeds ranked after it went unreached in a
    small budget: experiments/full_sweep_h200). The library's split twins are dropped
    there: one TF32 pass meets the tolerance at less cost.

    Elsewhere one-pass twins are dropped (where eager's TF32 output misses the tolerance, a candidate's
    would too), and the order is: Inductor's program with its cuDNN convolutions split into a TF32 and a
    BF16 pass, into one TF32 pass over tripled channels, into three TF32 passes, and as it is, the splits before the plain call where they cost
    fewer TF32 passes than its exact fp32 takes (`exact_slowdown`: see `exact_fp32_slowdown`; unknown
    counts as paying), then our own kernels: fp32 dot products on 3xBF16 tensor cores, on 3xTF32, then
    in exact fp32 (experiments/sample_sweep_h200/run_03); a level-3 search has time for two or three seeds."""
    # (own kernels, fp32 precision; None: exact) in the order they are worth evaluating
    order: list[tuple[bool, str | None]]
    if eager_passes:  # the library's splits are dropped there (worth)
        order = [(False, EAGER_CONV_PRECISION), (True, EAGER_CONV_PRECISION), (True, "bf16x3"), (False, None)]
    else:
        # exact fp32 cuDNN ran 2.4-8.6x slower than one TF32 pass on L1/55, L1/56, L1/62, L1/63, L1/67
        # (eager on the H200): the split calls go before the plain one where they cost fewer TF32 passes
        # than it takes (unknown: the splits first; a tie goes to the split, stable sort)
        plain_passes = float("inf") if exact_slowdown is None else exact_slowdown
        library: list[tuple[bool, str | None]] = [
            (False, "tf32_bf16"),
            (False, LIBRARY_CONV_ONE_PASS),
            (False, "tf32x3"),
            (False, None),
        ]
        order = sorted(library, key=lambda entry: LIBRARY_SPLIT_PASSES.get(str(entry[1]), plain_passes))
        order.append((True, "bf16x3"))
    # 3xBF16 before 3xTF32: faster on most problems with both (experiments/full_sweep_h200)
    order += [(True, "tf32x3"), (True, None)]

    def rank(seed: Candidate) -> int:
        own, precision = bool(seed.metadata.get("own_kernels")), seed.metadata.get("fp32_precision")
        return order.index((own, precision) if (own, precision) in order else (own, None))

    def worth(seed: Candidate) -> bool:
        own, precision = bool(seed.metadata.get("own_kernels")), seed.metadata.get("fp32_precision")
        if precision == LIBRARY_CONV_ONE_PASS and seed.metadata.get("layout_optimization") is False:
            # the TF32+BF16 split in the reference's layout lost to Inductor's (channels-last) on each
            # convolution measured in both (experiments/library_conv_split_h200): one evaluation saved
            return False
        if not own and precision in LIBRARY_SPLIT_PASSES:
            # where one TF32 pass meets the tolerance it is cheaper than any split (tuning can still go
            # there; experiments/sample_sweep_h200/run_09)
            return not eager_passes
        if precision != EAGER_CONV_PRECISION:
            return True
        return one_pass_worth(own, eager_passes, exact_slowdown)

    def group(seed: Candidate) -> bool:  # False sorts first
        return bool(seed.metadata.get("attention_as_matmuls")) != matmul_attention_first

    # stable: the layout-optimised capture first within a rank
    return sorted(filter(worth, seeds), key=lambda seed: (group(seed), rank(seed)))


def capture_device(ctx: ProposalContext) -> str:
    """Where Inductor's code is captured for: the CPU platform gets Triton for the interpreter."""
    return "cpu" if ctx.platform.device == "cpu" else "cuda"


def capture_settings(metadata: Mapping[str, Any]) -> tuple[CaptureSettings, dict[str, Any]]:
    """(capture settings, Inductor config patches) a compiler seed or its descendant was captured with:
    what re-capturing it needs. The settings are recorded only where they differ from Inductor's own."""
    return CaptureSettings.from_metadata(metadata), dict(metadata.get("inductor_config") or {})


def library_calls(programs: list[Any]) -> tuple[str, ...]:
    return tuple(sorted({c for p in programs for c in p.program.library_calls}))


def fused_attention(programs: list[Any]) -> bool:
    """Whether the programs call one of Inductor's fused attention ops (own_attention.ATTENTION_OPS)."""
    return any(call in ATTENTION_OPS for call in library_calls(programs))


def attention_head_dim(programs: list[Any]) -> int:
    """The largest head size of the programs' fused attention ops (0: none)."""
    return max((p.attention_head_dim for p in programs), default=0)


def own_kernels_possible(programs: list[Any]) -> bool:
    """Whether every library call of the programs has our own Triton kernel to take its place (our
    attention kernel takes head sizes up to MAX_HEAD_DIM)."""
    from kernelevolve.variation.compiler.own_gemm import substitutable

    if attention_head_dim(programs) > MAX_HEAD_DIM:
        return False
    return substitutable(library_calls(programs), all(p.program.convolutions_substitutable for p in programs))


def render_variant(
    ctx: ProposalContext, programs: list[Any], device: str, own_kernels: bool
) -> tuple[str, dict[str, Any]]:
    """One standalone candidate from Inductor's programs at every shape: (source, metadata). Raises
    RenderError where it cannot be made (`own_kernels` with a library call we have no kernel for)."""
    from kernelevolve.variation.compiler.render import RenderError, render

    library = library_calls(programs)
    if own_kernels and not own_kernels_possible(programs):
        raise RenderError(f"no own kernel for the library call(s) {', '.join(library)}")
    source, params = render(ctx.spec.reference_source, programs, ctx.spec.name, device == "cpu", own_kernels)
    metadata = {
        "params": params,
        "kernels": sum(len(p.program.kernels) for p in programs),
        "library_calls": [] if own_kernels else list(library),
        "own_kernels": own_kernels,
        "source": "inductor",
        "inductor_config": {},  # the capture's config patches (none for a seed): see capture_settings
    }
    return source, metadata


def with_tensor_cores(
    source: str, precision: str = "tf32x3", tunables: Collection[str] = PRECISION_TUNABLES
) -> str | None:
    """The source with its own GEMMs' and convolutions' fp32 dot products on tensor cores at `precision`
    (one of TENSOR_CORE_PRECISIONS), or None where it has no such tunable among `tunables`."""
    from kernelevolve.variation.tunables import apply_values, find_tunables

    present = {t.name for t in find_tunables(source) if t.name in tunables and precision in t.choices}
    if not present:
        return None
    return apply_values(source, dict.fromkeys(present, precision))


def with_library_conv_timing(source: str) -> str:
    """The source with cuDNN's algorithm timing on for its library convolutions, where it has them."""
    from kernelevolve.variation.tunables import apply_values, find_tunables

    if not any(t.name == LIBRARY_CONV_TIMING_TUNABLE for t in find_tunables(source)):
        return source
    return apply_values(source, {LIBRARY_CONV_TIMING_TUNABLE: True})


def _tensor_core_twins(source: str, metadata: dict[str, Any], operator: str) -> list[Candidate]:
    """The seed with its fp32 GEMMs and convolutions on tensor cores, one seed per precision its tunables
    offer (own kernels: 3xTF32 and 3xBF16; cuDNN: a TF32 and a BF16 pass; convolutions: also one TF32
    pass, which by_promise keeps only where eager's passes; and the three TF32 terms in one pass over
    tripled channels): exact-fp32 dot products run at FFMA rate, where the baselines' cuDNN runs TF32
    (KernelBench's convolutions), and a small search budget rarely reaches that tunable by mutation.
    cuDNN's three separate TF32 passes are left to tuning: its TF32+BF16 split computes the same terms in
    two passes' time, and a conv problem's seeds already fill most of a 12-evaluation budget."""
    twins = []
    for precision in TENSOR_CORE_PRECISIONS:
        tunables = [t for t in PRECISION_TUNABLES if (t, precision) not in TUNING_ONLY_PRECISIONS]
        twin = with_tensor_cores(source, precision, tunables)
        if twin is None:
            continue
        if precision in TIMED_LIBRARY_CONV_PRECISIONS:
            twin = with_library_conv_timing(twin)
        extra = {"fp32_precision": precision}
        twins.append(Candidate(twin, BACKEND, operator, "seed", metadata={**metadata, **extra}))
    return twins


def capture_programs(
    ctx: ProposalContext,
    device: str,
    settings: CaptureSettings = INDUCTORS_OWN,
    inductor_config: Mapping[str, Any] | None = None,
    operator: str = "compiler_seed",
) -> list[Any] | None:
    """Inductor's program at every shape of the spec, captured as `settings` say, or None (logged as
    `operator`) where one cannot be had; `inductor_config`: further `torch._inductor.config` patches."""
    from kernelevolve.eval.device_lock import hold_device
    from kernelevolve.variation.compiler.capture import CaptureError, capture
    from kernelevolve.variation.compiler.program import Unsupported, parse
    from kernelevolve.variation.compiler.render import ShapeProgram

    programs = []
    for shape in ctx.spec.shapes:
        try:
            # the device lock too: the capture runs the reference and Inductor's benchmarks at full size,
            # which must neither disturb another evaluation's timing nor take the memory it holds
            with TRACING_LOCK, hold_device(device):
                captured = capture(ctx.spec, shape, device, settings, inductor_config)
            programs.append(
                ShapeProgram(
                    shape.name,
                    captured.input_shapes,
                    captured.state_names,
                    parse(captured.code),
                    captured.graph_inputs,
                    captured.constants,
                    captured.attention_head_dim,
                )
            )
        except (CaptureError, Unsupported) as exc:
            log.info("%s: no capture of %s at %s: %s", operator, ctx.spec.name, shape.name, exc)
            return None
        except Exception as exc:  # a bug or an Inductor surprise must not stop the search
            log.warning("%s: capture failed for %s: %s", operator, ctx.spec.name, exc, exc_info=True)
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
