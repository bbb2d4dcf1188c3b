"""Triton backend: static checks, loading candidates from a real file, error classes, prompt text."""

from __future__ import annotations

import ast
import logging
import os
from types import ModuleType
from typing import TYPE_CHECKING

from kernelevolve.backends.loading import SourceLoader, exception_chain
from kernelevolve.backends.triton_interpreter import patch_interpreter
from kernelevolve.types import StaticIssue, Status

if TYPE_CHECKING:
    from kernelevolve.platforms import Platform

log = logging.getLogger(__name__)

# Messages of errors that come from compiling a kernel rather than from running it.
_COMPILE_MARKERS = ("PassManager::run failed", "ptxas", "MLIR", "triton.compiler")


class TritonBackend:
    name = "triton"
    runtime_package = "triton"

    def __init__(self) -> None:
        self._loader = SourceLoader("kernelevolve-triton-")

    # ------------------------------------------------------------------------------- static
    def static_issues(self, source: str) -> list[StaticIssue]:
        """A @triton.jit kernel must exist. Whether forward launches it is the generic checks' call-path
        rule (which follows kernels held in values and helper objects) and, at run time, the launches the
        runner counts. A source that does not parse yields no issue here: loading reports it."""
        try:
            tree = ast.parse(source)
        except SyntaxError:
            return []
        kernels = _jit_kernels(tree)
        if not kernels:
            return [
                StaticIssue(
                    "no_backend_kernel",
                    "no @triton.jit kernel is defined; the work must be done by a Triton kernel "
                    "launched as kernel[grid](...) from ModelNew.forward",
                )
            ]
        return []

    # ------------------------------------------------------------------------------- process
    def prepare_process(self, device: str) -> None:
        if device.split(":")[0] == "cpu":
            os.environ["TRITON_INTERPRET"] = "1"  # read by triton.jit at decoration time
            patch_interpreter()  # the interpreter's bf16 arithmetic uses bits (triton_interpreter.py)
        elif os.environ.pop("TRITON_INTERPRET", None) is not None:
            # Inherited from the parent's environment: on a GPU it would time interpreted kernels.
            log.warning("TRITON_INTERPRET dropped in the %s evaluation child: kernels compile for it", device)
        try:  # pay the import once at worker start, not inside a timed-out request
            import triton  # noqa: F401
        except ImportError:
            log.warning("triton is not installed; Triton candidates will fail to load")

    def load(self, source: str, module_name: str) -> ModuleType:
        """Import the source from a real file: the DSL reads kernel source through `inspect`."""
        if os.environ.get("TRITON_INTERPRET") == "1":
            patch_interpreter()
        return self._loader.load(source, module_name)

    def classify_error(self, exc: BaseException, stage: str) -> Status:
        if stage == "load":
            return Status.COMPILE_ERROR
        compile_types = _compile_error_types()
        for error in exception_chain(exc):
            if compile_types and isinstance(error, compile_types):
                return Status.COMPILE_ERROR
            if isinstance(error, RuntimeError) and any(m in str(error) for m in _COMPILE_MARKERS):
                return Status.COMPILE_ERROR
        return Status.RUNTIME_ERROR

    # ------------------------------------------------------------------------------- prompts
    def prompt_guidance(self, platform: Platform) -> str:
        lines = [
            "Write the work as @triton.jit kernels launched from ModelNew.forward as kernel[grid](...). "
            "Use BLOCK sizes as tl.constexpr powers of two; mask every tl.load/tl.store at ragged edges "
            "(offs < n) and pass `other=` for masked loads feeding reductions. Compute in fp32 "
            "(tl.float32 accumulators) and cast once at the store. Allocate outputs with torch.empty and "
            "write every element. Use tl.dot for matrix products (tiles of at least 16 in each "
            "dimension) and tl.sum/tl.max for reductions along a tile axis. num_warps (4-8 typical) and "
            "num_stages (2-4 for pipelined loads) are launch arguments; no @triton.autotune: the search "
            "tunes block sizes and launch parameters itself. Do not call PyTorch compute ops for the work.",
        ]
        if platform.device == "cpu":
            lines.append(
                "This platform runs Triton under the interpreter (TRITON_INTERPRET=1): keep grids small, "
                "avoid inline asm and hardware-specific intrinsics; timings are not meaningful."
            )
        elif platform.vendor == "nvidia":
            features = f"{platform.compute_units} SMs, warp size {platform.warp_size}"
            if platform.shared_memory_per_block_bytes:
                features += f", {platform.shared_memory_per_block_bytes // 1024} KiB shared memory per block"
            lines.append(
                f"{platform.name} ({platform.arch}): {features}, L2 {platform.l2_bytes >> 20} MiB. Size grids "
                "to fill every SM (a persistent grid of one program per SM suits small problems); "
                "use bf16/fp16 inputs to tl.dot for tensor cores, tf32 through input_precision."
            )
            if platform.arch in ("sm90", "sm100"):
                lines.append(
                    "Hopper: tl.dot lowers to wgmma with 128x128 or 128x256 tiles, num_warps=8 and "
                    "num_stages=3-4; tensor descriptors (tl.make_tensor_descriptor) use TMA loads."
                )
        elif platform.vendor == "amd":
            lines.append(
                f"{platform.name} ({platform.arch}): wavefronts of {platform.warp_size} lanes, "
                f"{platform.compute_units} CUs; num_stages 1-2 is usual, and waves_per_eu / matrix_instr_nonkdim "
                "are the AMD-specific launch knobs."
            )
        return " ".join(lines)


def _compile_error_types() -> tuple[type[BaseException], ...]:
    try:
        from triton.compiler.errors import CompilationError
        from triton.runtime.errors import OutOfResources
    except ImportError:
        return ()
    return (CompilationError, OutOfResources)


# ----------------------------------------------------------------------------------- AST helpers


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _import_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> dotted name it was imported as (`from triton import jit as j` -> j: triton.jit)."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                aliases[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def _is_jit(expr: ast.AST, aliases: dict[str, str]) -> bool:
    head, _, rest = _dotted(expr).partition(".")
    resolved = aliases.get(head, head) + (f".{rest}" if rest else "")
    return resolved.split(".")[-1] == "jit"


def _jit_kernels(tree: ast.Module) -> set[str]:
    """@triton.jit kernels at any depth: a factory that defines its kernel inside (specialised per call,
    memoised) is a common form. Whether forward launches one is the call path's rule, not this one's."""
    aliases = _import_aliases(tree)
    kernels = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(_is_jit(d, aliases) for d in node.decorator_list):
            kernels.add(node.name)
        elif (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and _is_jit(node.value.func, aliases)
        ):
            kernels.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return kernels


BACKEND = TritonBackend()
