"""Compile a Triton candidate's kernels at every shape without launching any of them.

Run before the evaluation takes the device lock, so compilation (seconds of CPU per candidate)
overlaps another child's correctness and timing runs on the same GPU. ModelNew is called on
placeholder inputs (uninitialised floats, zeroed integers: no kernels to make them) with Triton's
launches turned into compile-only warm-ups; its compiled kernels stay in Triton's caches for the
real runs. Anything that goes wrong here is ignored: the real run compiles what was missed and
reports the candidate's faults itself.

With `fake_device_work` (the harness's first pass for every candidate, `runner._Runner._precompile`) every PyTorch
op that would run on the device is answered from its meta kernel instead (`device_work_faked`): an
uninitialised tensor of the result's shape and strides, or for an in-place op the tensor it writes, left as
it was. Nothing runs on the GPU, so the pass needs no lock: a candidate's library calls (cuDNN, cuBLAS) and
its fills and copies no longer run beside another child's timing, and the 20-60 Triton kernels of a
level-3 Inductor program no longer compile while the evaluation holds the device.

The kernels compile in a thread pool (Triton's AsyncCompileMode): the suppressed launches submit their
compiles and return, and the pass waits for all of them at its end. Most of Triton's compile runs outside
the GIL (1.7-1.8x with 2 threads on 2 cores, experiments/parallel_compile_cpu), and a level-3 Inductor
program launches 20-60 kernels, which took about 7.5 s one after another on the H200.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import Any

from kernelevolve.specs import reference
from kernelevolve.types import ShapeCase

log = logging.getLogger(__name__)

# Threads compiling one evaluation's kernels. Two evaluation children per GPU share the host's cores.
COMPILE_THREADS = max(1, min(8, (os.cpu_count() or 2) // 2))


class _Unsupported(Exception):
    """A kernel kind whose warm-up would still run work (Triton's autotuner benchmarks configs)."""


def precompile(
    model_new: type,
    ref_module: ModuleType,
    shapes: Sequence[ShapeCase],
    seed: int,
    device: str,
    dtype: Any,
    fake_device_work: bool = False,
) -> str:
    """Compile at every shape; returns "" on success, else why it stopped (never raises). With
    `fake_device_work`, PyTorch's own ops in forward run nothing on the device (`device_work_faked`)."""
    import torch

    try:
        for shape in shapes:
            reference.apply_shape(ref_module, shape)
            inputs = placeholder_inputs(ref_module, device, dtype)
            # faked, the model's parameters are made without their initialising kernels too
            faked = device_work_faked() if fake_device_work else contextlib.nullcontext()
            with faked:
                model = reference.build_model(model_new, ref_module, seed, device, dtype)
                with launches_suppressed(), compiles_in_parallel(), torch.no_grad():
                    model(*inputs)
            del model, inputs
    except Exception as exc:  # the real run reports candidate faults; here they only end the pass
        log.debug("precompile stopped: %s: %s", type(exc).__name__, exc)
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    finally:
        # placeholders held in this child's allocator cache would crowd the child measuring now
        torch.cuda.empty_cache()
    return ""


def placeholder_inputs(module: ModuleType, device: str, dtype: Any) -> list[Any]:
    """Inputs of the right shapes, dtypes and layout, made without running a kernel."""
    return place_inputs(input_layout(module), device, dtype)


def input_layout(module: ModuleType) -> list[Any]:
    """`get_inputs()`'s tensors as (shape, dtype name) pairs, made on the meta device; other values kept."""
    import torch

    with torch.device("meta"):
        shaped = module.get_inputs()
    return [
        reference.map_tensors(
            lambda t: {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")}, v
        )
        for v in shaped
    ]


def layout_bytes(layout: list[Any], dtype: Any) -> int:
    """Bytes the placeholders of an `input_layout` take (floating tensors in `dtype`, as placed)."""
    return sum(_layout_size(v, dtype) for v in layout)


def _layout_size(value: Any, dtype: Any) -> int:
    import torch

    if isinstance(value, dict) and set(value) == {"shape", "dtype"}:
        kind = getattr(torch, value["dtype"])
        element = (dtype if kind.is_floating_point else kind).itemsize
        return math.prod(value["shape"]) * element
    if isinstance(value, (list, tuple)):
        return sum(_layout_size(v, dtype) for v in value)
    return 0


def place_inputs(layout: list[Any], device: str, dtype: Any) -> list[Any]:
    """Placeholders for an `input_layout`: uninitialised floats, zeroed integers (valid indices, lengths)."""
    return [_placeholder(v, device, dtype) for v in layout]


def _placeholder(value: Any, device: str, dtype: Any) -> Any:
    import torch

    if isinstance(value, dict) and set(value) == {"shape", "dtype"}:
        kind = getattr(torch, value["dtype"])
        if kind.is_floating_point:
            return torch.empty(value["shape"], dtype=dtype, device=device)
        return torch.zeros(value["shape"], dtype=kind, device=device)
    if isinstance(value, (list, tuple)):
        return type(value)(_placeholder(v, device, dtype) for v in value)
    return value


OWN_KERNELS_ONLY = "own_kernels_only"
FAKED_LIBRARY_WORK = "faked_library_work"


def precompile_passes(how: str, compile_pass: Callable[[bool], str]) -> None:
    """The first pass with PyTorch's device work faked; an own-kernel candidate whose faked pass stopped
    early (data-dependent host code such as `.item()`) gets a real pass for what it missed: its PyTorch
    ops are data movement, which may then run unlocked. A library-calling one never does: its library
    work must not run unlocked, beside another evaluation's timing (a neighbour's stream of small kernels
    made Tanh's median 17% slower and its timing 3x longer, experiments/eval_throughput)."""
    stopped = compile_pass(True)
    if stopped and how == OWN_KERNELS_ONLY:
        compile_pass(False)


def precompile_builds(
    builds: Sequence[tuple[Callable[[], Any], list[Any]]],
    device: str,
    dtype: Any,
    fake_device_work: bool = False,
) -> str:
    """`precompile` for a runner: per shape, a function building ModelNew and its `input_layout`."""
    import torch

    try:
        for build, layout in builds:
            inputs = place_inputs(layout, device, dtype)
            faked = device_work_faked() if fake_device_work else contextlib.nullcontext()
            with faked:
                model = build()
                with launches_suppressed(), compiles_in_parallel(), torch.no_grad():
                    model(*inputs)
            del model, inputs
    except Exception as exc:  # the real run reports candidate faults; here they only end the pass
        log.debug("precompile stopped: %s: %s", type(exc).__name__, exc)
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    finally:
        torch.cuda.empty_cache()
    return ""


@contextlib.contextmanager
def compiles_in_parallel(threads: int = COMPILE_THREADS) -> Iterator[None]:
    """Within the block, Triton compiles submitted kernels in `threads` threads; leaving it waits for
    them all. A compile error is left for the real run to report."""
    import triton

    if threads <= 1:
        yield
        return
    with (
        _CompilePool(threads, thread_name_prefix="precompile") as pool,
        triton.AsyncCompileMode(pool, ignore_errors=True),
    ):
        yield


class _CompilePool(ThreadPoolExecutor):
    """The compile threads, started (on `submit`) as the harness's own: the runner fails a candidate that
    starts threads (`runner_trace`), and Triton submits from inside the candidate's call. They end with
    `compiles_in_parallel`'s block, before any checked call."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        from kernelevolve.eval.runner_trace import harness_thread_starts

        with harness_thread_starts():
            return super().submit(fn, *args, **kwargs)


@contextlib.contextmanager
def launches_suppressed() -> Iterator[None]:
    """Within the block, Triton kernel launches compile (warm-up) and return without running."""
    from triton.runtime import autotuner, jit

    run = jit.JITFunction.run
    autotuned = autotuner.Autotuner.run

    def compile_only(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        return run(self, *args, grid=grid, warmup=True, **kwargs)

    def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise _Unsupported("an autotuned kernel: its configs are compiled and timed in the real run")

    jit.JITFunction.run = compile_only  # type: ignore[method-assign]
    autotuner.Autotuner.run = refuse  # type: ignore[method-assign]
    try:
        yield
    finally:
        jit.JITFunction.run = run  # type: ignore[method-assign]
        autotuner.Autotuner.run = autotuned  # type: ignore[method-assign]


# Ops that run no kernel on the device, passed through as they are: views share their base's storage
# (which the candidate may write through), and allocations return uninitialised memory.
_ALLOCATIONS = frozenset(
    {"aten::empty", "aten::empty_strided", "aten::empty_like", "aten::new_empty", "aten::new_empty_strided"}
)


@contextlib.contextmanager
def device_work_faked(device_types: tuple[str, ...] = ("cuda",)) -> Iterator[None]:
    """Within the block, PyTorch ops on tensors of `device_types` return what their meta kernels say
    they return, allocated and left uninitialised (an in-place or out= op returns the tensor it would
    write, unchanged). An op with no meta kernel raises, which ends a precompile pass early."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class NoDeviceWork(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            return _faked_call(func, args, kwargs or {}, device_types)

    with NoDeviceWork():
        yield


def _faked_call(func: Any, args: Any, kwargs: dict[str, Any], device_types: tuple[str, ...]) -> Any:
    import torch
    from torch.utils._pytree import tree_map

    on_device = [t.device for t in _tensors(args, kwargs) if t.device.type in device_types]
    made_on = kwargs.get("device")  # factories (zeros, full, arange, randn) name their device
    if made_on is not None and torch.device(made_on).type in device_types:
        on_device.append(torch.device(made_on))
    if func.is_view or func._schema.name in _ALLOCATIONS or not on_device:
        return func(*args, **kwargs)
    # where results go: the device the op names (`.cpu()` of a GPU tensor lands on the host), else its inputs'
    device = torch.device(made_on) if made_on is not None else on_device[0]

    def to_meta(value: Any) -> Any:
        return value.to("meta") if isinstance(value, torch.Tensor) else value

    meta_kwargs = tree_map(to_meta, kwargs)
    if made_on is not None:
        meta_kwargs["device"] = torch.device("meta")
    meta_out = func(*tree_map(to_meta, args), **meta_kwargs)
    written = _written_arguments(func, args, kwargs)

    def on_the_device(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.device.type == "meta":
            return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device=device)
        return value

    if not isinstance(meta_out, tuple):
        return written[0] if 0 in written else tree_map(on_the_device, meta_out)  # lists of tensors too
    return tuple(written[i] if i in written else tree_map(on_the_device, v) for i, v in enumerate(meta_out))


def _tensors(args: Any, kwargs: dict[str, Any]) -> list[Any]:
    import torch
    from torch.utils._pytree import tree_leaves

    return [leaf for leaf in tree_leaves((args, kwargs)) if isinstance(leaf, torch.Tensor)]


def _written_arguments(func: Any, args: Any, kwargs: dict[str, Any]) -> dict[int, Any]:
    """Return position -> the argument it aliases, for ops that return an argument they write
    (`add_`'s self, `mm.out`'s out)."""
    schema = func._schema
    by_alias: dict[str, Any] = {}
    for position, argument in enumerate(schema.arguments):
        info = argument.alias_info
        if info is None or not info.is_write:
            continue
        value = (
            kwargs[argument.name]
            if argument.name in kwargs
            else (args[position] if position < len(args) else None)
        )
        for name in info.before_set:
            by_alias[name] = value
    written: dict[int, Any] = {}
    for index, returned in enumerate(schema.returns):
        info = returned.alias_info
        if info is not None:
            names = [n for n in info.before_set if n in by_alias]
            if names:
                written[index] = by_alias[names[0]]
    return written
