"""CuTe DSL backend (nvidia-cutlass-dsl 4.x): static checks, loading, error classes, prompt text, compile-only.

`cute.compile` needs no GPU: it traces the @cute.jit launcher and its @cute.kernel functions, lowers them
through MLIR/NVVM and assembles a cubin for the target arch in-process (the wheel bundles the compiler).
Only launching needs a device. So where CuTe support is "compile_only" (platform cpu), `compile_only`
builds ModelNew and its inputs as meta tensors and compiles every kernel through the convention every
CuTe candidate follows:

    ModelNew.compile_kernels(*inputs) -> dict[str, compiled]   # inputs may be meta tensors

which compiles (and caches, keyed by shapes/dtypes/alignment) everything forward(*inputs) launches from
shapes and dtypes alone, without reading tensor data or launching.
"""

from __future__ import annotations

import ast
import itertools
import linecache
import logging
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType, ModuleType, TracebackType
from typing import TYPE_CHECKING, Any

from kernelevolve.backends.cute_source import _CuteSource
from kernelevolve.backends.loading import SourceLoader, exception_chain
from kernelevolve.types import ShapeCase, StaticIssue, Status

if TYPE_CHECKING:
    from kernelevolve.platforms import Platform
    from kernelevolve.types import KernelSpec

log = logging.getLogger(__name__)

DEFAULT_COMPILE_ARCH = "sm_90a"  # compile_only target where the platform names no NVIDIA arch (cpu)
INSTALL_HINT = "pip install nvidia-cutlass-dsl==4.8.1 (the project's `gpu` extra)"
# Functions of the DSL's compile pipeline (tracing, IR generation, lowering to cubin). An exception raised
# under one of them is a compile error whatever its type: the DSL lets library errors through unchanged.
_COMPILE_FRAMES = frozenset(
    {"_compile", "generate_mlir", "build_module", "build_ir_module", "compile_and_jit"}
)
_EXECUTOR_FRAMES = frozenset({"run_compiled_program", "generate_execution_args", "_generate_execution_args"})
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SOURCE_DIR_PREFIX = "kernelevolve-cute-"
_counter = itertools.count()


@dataclass(frozen=True)
class CompileOutcome:
    """Result of compiling a candidate's kernels without running them (failures are data, never raised)."""

    ok: bool
    error_name: str = ""  # exception class or static issue code
    feedback: str = ""  # what happened, for logs and repair prompts
    seconds: float = 0.0
    status: Status = Status.OK  # OK, REJECTED_STATIC, COMPILE_ERROR or RUNTIME_ERROR
    kernels: tuple[str, ...] = ()  # the names compile_kernels returned
    arch: str = ""


def cute_arch(platform_arch: str) -> str:
    """Platform arch ("sm90", "sm80") -> the DSL target ("sm_90a", "sm_80"); anything else -> the default."""
    match = re.fullmatch(r"sm_?(\d+)a?", platform_arch.strip().lower())
    if not match:
        return DEFAULT_COMPILE_ARCH
    digits = match.group(1)
    return (
        f"sm_{digits}a" if int(digits) >= 90 else f"sm_{digits}"
    )  # "a": wgmma/TMA need the arch-specific target


def describe_exception(exc: BaseException, limit: int = 4000) -> str:
    """Exception text without the DSL's terminal colours, plus the candidate line that raised it."""
    text = _ANSI.sub("", str(exc)).strip() or type(exc).__name__
    origin = ""
    for frame in _frames(exc.__traceback__):
        if _SOURCE_DIR_PREFIX in frame.f_code.co_filename:
            code = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
            origin = (
                f"candidate line {frame.f_lineno}: {code}" if code else f"candidate line {frame.f_lineno}"
            )
    if origin:
        text = f"{text}\n(raised at {origin})"
    return text if len(text) <= limit else text[: limit - 16] + "\n... [truncated]"


class CuteBackend:
    name = "cute"
    runtime_package = "cutlass"

    def __init__(self) -> None:
        self._loader = SourceLoader(_SOURCE_DIR_PREFIX)

    # ------------------------------------------------------------------------------- static
    def static_issues(self, source: str) -> list[StaticIssue]:
        """A @cute.kernel launched from a @cute.jit launcher that ModelNew uses, and ModelNew.compile_kernels.

        A source that does not parse yields no issue here: loading reports it as a compile error.
        """
        try:
            tree = ast.parse(source)
        except SyntaxError:
            return []
        return _CuteSource(tree).issues()

    # ------------------------------------------------------------------------------- process
    def prepare_process(self, device: str) -> None:
        """Pay the cutlass import once at worker start; a CPU worker compiles for Hopper, not the DSL's sm_100a."""
        try:
            dsl = _dsl()
        except ImportError:
            log.warning("CuTe candidates will fail to load: nvidia-cutlass-dsl is missing (%s)", INSTALL_HINT)
            return
        if device.split(":")[0] == "cpu":
            dsl.envar.arch = DEFAULT_COMPILE_ARCH

    def load(self, source: str, module_name: str) -> ModuleType:
        """Import the source from a real file: the DSL reads kernel source through `inspect`."""
        return self._loader.load(source, module_name)

    def classify_error(self, exc: BaseException, stage: str) -> Status:
        """Raised while loading or inside cute.compile: COMPILE_ERROR; launches and everything else: RUNTIME_ERROR."""
        if stage == "load":
            return Status.COMPILE_ERROR
        for error in exception_chain(exc):
            frames = {frame.f_code.co_name for frame in _frames(error.__traceback__) if _in_cutlass(frame)}
            if frames & _COMPILE_FRAMES:
                return Status.COMPILE_ERROR
            classes = {cls.__name__ for cls in type(error).__mro__}
            if "DSLCudaRuntimeError" in classes:
                return Status.RUNTIME_ERROR
            if "DSLBaseError" in classes and not frames & _EXECUTOR_FRAMES:
                return Status.COMPILE_ERROR
        return Status.RUNTIME_ERROR

    # ------------------------------------------------------------------------------- prompts
    def prompt_guidance(self, platform: Platform) -> str:
        lines = [_GUIDANCE_CORE]
        if platform.support(self.name) == "compile_only":
            lines.append(
                f"On {platform.name} CuTe kernels are compiled (for {DEFAULT_COMPILE_ARCH}) but never run: "
                "compile_kernels is called with meta tensors, so it must work from shapes and dtypes alone; "
                "correctness and speed are only measured on an NVIDIA GPU."
            )
        elif platform.vendor == "nvidia":
            smem = platform.shared_memory_per_block_bytes // 1024
            lines.append(
                f"{platform.name} ({platform.arch}, target {cute_arch(platform.arch)}): {platform.compute_units} SMs, "
                f"{smem} KiB shared memory per block, L2 {platform.l2_bytes >> 20} MiB, "
                f"{platform.peak_bandwidth_gbs:.0f} GB/s. Size grids to fill every SM; memory-bound kernels need "
                "128-bit accesses and enough bytes in flight per SM."
            )
            lines.append(_GUIDANCE_SM80)
            if cute_arch(platform.arch) in ("sm_90a", "sm_100a"):
                lines.append(_GUIDANCE_SM90)
        return " ".join(lines)

    # ------------------------------------------------------------------------------- compile only
    def compile_only(
        self, source: str, spec: KernelSpec, shape: ShapeCase, *, arch: str = DEFAULT_COMPILE_ARCH
    ) -> CompileOutcome:
        """Load the candidate, build ModelNew and the spec's inputs at `shape` as meta tensors, compile every kernel.

        Nothing is launched and no tensor data exists, so this runs without a GPU. Candidate failures come
        back as data; a missing nvidia-cutlass-dsl or a broken spec reference raises.
        """
        started = time.perf_counter()
        issues = self.static_issues(source)
        if issues:
            feedback = "; ".join(issue.message for issue in issues)
            return CompileOutcome(False, issues[0].code, feedback, 0.0, Status.REJECTED_STATIC, arch=arch)
        init_inputs, inputs, dtype = _meta_inputs(
            spec, shape
        )  # spec problems raise: not the candidate's fault
        dsl = _dsl()
        module_name = f"kernelevolve_cute_compile_{next(_counter)}"
        previous_arch = dsl.envar.arch
        dsl.envar.arch = arch
        try:
            return self._compile_candidate(
                source, init_inputs, inputs, dtype, shape, arch, module_name, started, spec.mode
            )
        finally:
            dsl.envar.arch = previous_arch
            sys.modules.pop(module_name, None)

    def _compile_candidate(
        self,
        source: str,
        init_inputs: list[Any],
        inputs: list[Any],
        dtype: Any,
        shape: ShapeCase,
        arch: str,
        module_name: str,
        started: float,
        mode: str = "as_built",
    ) -> CompileOutcome:
        import torch

        from kernelevolve.specs.reference import apply_mode

        def failed(exc: BaseException, stage: str, what: str) -> CompileOutcome:
            feedback = f"{what}: {type(exc).__name__}: {describe_exception(exc)}"
            status = self.classify_error(exc, stage)
            return CompileOutcome(
                False, type(exc).__name__, feedback, time.perf_counter() - started, status, arch=arch
            )

        try:
            module = self.load(source, module_name)
        except Exception as exc:
            return failed(exc, "load", "loading the candidate failed")
        try:
            with torch.device("meta"):
                model = module.ModelNew(*init_inputs)
            model = apply_mode(model.to(dtype=dtype), mode)
        except Exception as exc:
            return failed(exc, "run", "building ModelNew on the meta device failed")
        try:
            with torch.no_grad():
                compiled = model.compile_kernels(*inputs)
        except Exception as exc:
            return failed(exc, "run", f"ModelNew.compile_kernels failed at shape {shape.name!r}")
        seconds = time.perf_counter() - started
        names, problem = _check_compiled(compiled)
        if problem:
            return CompileOutcome(
                False, "compile_kernels_contract", problem, seconds, Status.COMPILE_ERROR, arch=arch
            )
        summary = f"compiled {len(names)} kernel(s) ({', '.join(names)}) for {arch} in {seconds:.2f} s"
        return CompileOutcome(True, feedback=summary, seconds=seconds, kernels=names, arch=arch)


# ----------------------------------------------------------------------------------- helpers


def _dsl() -> Any:
    """The CuTe DSL singleton (its `envar.arch` is the compile target); ImportError names the package."""
    try:
        from cutlass.cutlass_dsl import CuTeDSL
    except ImportError as exc:
        raise ImportError(f"CuTe DSL is not available ({exc}); install it with {INSTALL_HINT}") from exc
    return CuTeDSL._get_dsl()


def _meta_inputs(spec: KernelSpec, shape: ShapeCase) -> tuple[list[Any], list[Any], Any]:
    """Init inputs on the host and forward inputs as meta tensors (shape and dtype only) for `shape`."""
    import torch

    from kernelevolve.specs.reference import apply_shape, load_reference, to_device, torch_dtype

    reference = load_reference(spec.reference_source)
    apply_shape(reference, shape)
    dtype = torch_dtype(spec.dtype)
    init_inputs = to_device(list(reference.get_init_inputs()), "cpu", dtype)
    with torch.device("meta"):  # factories in get_inputs allocate nothing
        inputs = list(reference.get_inputs())
    return init_inputs, list(to_device(inputs, "meta", dtype)), dtype


def _check_compiled(compiled: Any) -> tuple[tuple[str, ...], str]:
    """compile_kernels must return a non-empty dict of cute.compile results."""
    contract = "compile_kernels must return a non-empty dict mapping a name to each cute.compile result"
    if not isinstance(compiled, dict) or not compiled:
        return (), f"{contract}; got {type(compiled).__name__}"
    from cutlass.base_dsl.jit_executor import JitCompiledFunction

    wrong = [str(name) for name, fn in compiled.items() if not isinstance(fn, JitCompiledFunction)]
    if wrong:
        return (), f"{contract}; not compiled functions: {', '.join(wrong)}"
    return tuple(str(name) for name in compiled), ""


def _frames(tb: TracebackType | None) -> Iterator[FrameType]:
    """Every frame of a traceback; the DSL hides its own frames only when printing, they are still here."""
    while tb is not None:
        yield tb.tb_frame
        tb = tb.tb_next


def _in_cutlass(frame: FrameType) -> bool:
    return "/cutlass/" in frame.f_code.co_filename.replace("\\", "/")


# ----------------------------------------------------------------------------------- prompt text

_GUIDANCE_CORE = (
    "Write CuTe DSL (nvidia-cutlass-dsl 4.x: `import cutlass`, `import cutlass.cute as cute`, "
    "`import cuda.bindings.driver as cuda`). Structure: @cute.kernel device functions; a @cute.jit launcher "
    "taking cute.Tensor arguments and `stream: cuda.CUstream` that builds layouts/tiled copies/tiled MMAs "
    "and calls kernel(...).launch(grid=(x, y, z), block=(threads, 1, 1), stream=stream). Convention (checked): "
    "ModelNew.compile_kernels(self, *inputs) compiles every kernel forward(*inputs) launches from shapes and "
    "dtypes alone (inputs may be meta tensors: never read data, never launch) with cute.compile(launcher, "
    "*fakes, cutlass.cute.runtime.make_fake_stream()), fakes from make_fake_compact_tensor(cutlass.Float32 "
    "etc., shape, stride_order=(ndim-1, ..., 0) for row-major, assumed_align=16), caches each result in a "
    "dict on self keyed by (shapes, dtypes, alignment) and returns {name: compiled}. forward goes through the "
    "same cache (cute.compile costs 0.1-2 s: once per shape/dtype, never per call), then calls the compiled "
    "function with from_dlpack(t, assumed_align=16) for each tensor (detach parameters; fall back to the "
    "element size when data_ptr() % 16 != 0) and cuda.CUstream(torch.cuda.current_stream().cuda_stream), "
    "passing only runtime arguments (cutlass.Constexpr parameters are folded in at compile time). "
    "Trace time vs run time: Python in @cute.jit/@cute.kernel bodies runs once while tracing; `if`/`for`/"
    "`while` on DSL values become device control flow, so use cutlass.const_expr(cond) for static branches, "
    "cutlass.range_constexpr(n) for unrolled loops, cutlass.range(...) for device loops, and compute "
    "shape-derived constants in plain helper functions (tensor shapes and t.iterator.alignment are Python "
    "ints at trace time). Memory: tile with cute.zipped_divide / cute.local_tile, partition with "
    "make_tiled_copy_tv(...).get_slice(tid).partition_S/D, move 128-bit vectors with "
    "cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype, num_bits_per_copy=128), guard ragged edges with "
    "cute.make_identity_tensor coordinates and cute.elem_less. Math on fragments is TensorSSA: t.load(), "
    "x.to(cutlass.Float32), + - * /, cute.where, cute.math.exp/exp2/erf/tanh/rsqrt, "
    "x.reduce(cute.ReductionOp.ADD, 0.0, 0), frag.store(y.to(dtype)); compute in fp32, cast once. Block "
    "reductions: cute.arch.warp_reduction_sum/max, then one value per warp in shared memory "
    "(cutlass.memory.SmemAllocator().allocate_tensor) and cute.arch.sync_threads(); compute "
    "cute.arch.warp_idx() on every lane before any `if lane_idx() == 0` (it is a full-warp shuffle: "
    "inside the branch the warp deadlocks at the barrier). Do not call PyTorch "
    "compute ops for the work; torch.empty for outputs is fine."
)
_GUIDANCE_SM80 = (
    "GEMMs: cute.make_tiled_mma over cute.nvgpu.warp.MmaF16BF16Op(ab_dtype, cutlass.Float32, (16, 8, 16)) "
    "for fp16/bf16 tensor cores (fp32 SIMT: cute.nvgpu.MmaUniversalOp(cutlass.Float32)); stage tiles in "
    "shared memory with cp.async (cute.nvgpu.cpasync.CopyG2SOp, cute.arch.cp_async_commit_group / "
    "cp_async_wait_group) over 2-4 stages, swizzled layouts (cute.make_swizzle) against bank conflicts, "
    "ldmatrix (cute.nvgpu.warp.LdMatrix8x8x16bOp) for shared->register; fuse bias and activation into the "
    "epilogue. fp32 inputs must stay fp32 unless the tolerance allows tf32."
)
_GUIDANCE_SM90 = (
    "Hopper (sm_90a): TMA loads (cute.nvgpu.cpasync.make_tiled_tma_atom with CopyBulkTensorTileG2SOp) "
    "with mbarrier pipelines (cutlass.pipeline), warpgroup MMA (cute.nvgpu.warpgroup.MmaF16BF16Op on 128-thread "
    "warpgroups; cutlass.utils.sm90_make_smem_layout_a/b for operand layouts), thread-block clusters for "
    "multicast; 228 KiB shared memory per SM allows 3-5 stages of 128x128x64 bf16 tiles."
)

BACKEND = CuteBackend()
