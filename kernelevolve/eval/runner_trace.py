"""What a candidate's call does in its runner, as the runner sees it: its Triton launches counted (the
judge requires its kernels to run), the threads it starts counted (PyTorch's dispatch modes are per thread,
so work on another thread escapes the strict trace, and a thread can write outputs after a call returns),
and in strict mode the PyTorch ops it dispatches (compute done by PyTorch, host data copied onto the
device) and the tensor data it reads into Python or NumPy (`host_reads`), and the ops and kernels it
registers with PyTorch's dispatcher (which change what PyTorch ops compute). All are the runner's word: the
static checks come first.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from kernelevolve.eval import host_reads, launch_replay, left_behind, own_work, steered_copies, strict_ops

_LAUNCHES = [0]
_LAUNCHES_OFF = [False]  # set for the judge's one call with the kernels left out (`kernel_share`)
_THREADS = [0]  # Python threads started since the candidate's import began
_REGISTRATIONS: list[str] = []  # dispatcher registrations made since the candidate's import began
_LEFT_BEHIND: list[str] = []  # hooks candidate code left installed once it returned (`left_behind`)
_HARNESS_STARTS = threading.local()  # set while the harness itself starts a thread (`harness_thread_starts`)
_TRACING: list[Any] = [None]  # the strict trace of the call running now, if any (`OpTrace.launched`)


class OpTrace:
    """PyTorch ops dispatched during checked calls (strict mode): compute ops by name (`strict_ops`) and
    copies of outside data steered by a host read (`steered_copies`), copies of host data onto the
    device (host-side computation copied in), and the most elements of tensor data one call read into
    Python or NumPy (`host_reads`)."""

    def __init__(self) -> None:
        self.compute_ops: set[str] = set()
        self.host_copies = 0
        self.host_reads = 0  # the most any one call read (`begin_call` starts the next call's count)
        self._reads = 0
        self.recording = True  # off between timed calls: the runner's own input refresh and output copies
        self._mode: Any = None
        self._sink: Any = None
        self._memory = steered_copies.CallMemory()

    def __enter__(self) -> OpTrace:
        from torch.utils._python_dispatch import TorchDispatchMode

        trace = self

        class _Recorder(TorchDispatchMode):
            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                trace.record(func, args, kwargs or {})
                result = func(*args, **(kwargs or {}))
                trace.follow(func, args, kwargs or {}, result)
                return result

        self._mode = _Recorder()
        self._mode.__enter__()
        self._sink = host_reads.reading_into(self.read)
        _TRACING[0] = self
        return self

    def __exit__(self, *exc: object) -> None:
        _TRACING[0] = None
        host_reads.reading_into(self._sink)
        self._mode.__exit__(*exc)

    def begin_call(self, inputs: Any = ()) -> None:
        """A new call on these input tensors: host reads are bounded per call, not over the whole timing
        loop, and the memory a call's copies move is followed per call."""
        self._reads = 0
        self._memory.begin(inputs)
        self.recording = True

    def read(self, elements: int) -> None:
        """Tensor data read into Python or NumPy (`host_reads`), while recording."""
        if self.recording:
            self._reads += elements
            self.host_reads = max(self.host_reads, self._reads)

    def fields(self) -> dict[str, Any]:
        """What a reply carries of this trace (the judge's `remote.strict_violation` reads it)."""
        return {
            "compute_ops": sorted(self.compute_ops)[:20],
            "host_copies": self.host_copies,
            "host_reads": self.host_reads,
        }

    def record(self, func: Any, args: Any, kwargs: dict[str, Any]) -> None:
        if not self.recording:
            return
        import torch

        name = strict_ops.op_name(func)
        # Read below by their attributes: a tensor whose class (or whose storage's) was swapped would answer
        # with candidate code, run here with this mode popped, so untraced (`strict_trace_calls_swapped_class`)
        odd = [t for t in own_work.tensors_in([args, kwargs]) if not own_work.exact(t, parameters=True)]
        if odd:
            self.compute_ops.add(f"{name} on a {own_work.type_name(type(odd[0]))} of the candidate's class")
            return
        if name == "_local_scalar_dense":  # `.item()`: one element read into Python
            self.read(1)
        self.read(host_reads.exposed_elements(args))  # memory a NumPy array or buffer also holds
        if strict_ops.computes(func, args, kwargs) and not self._joins(func):
            self.compute_ops.add(name)
            return
        if name in ("_to_copy", "copy_") and args:
            tensors = [a for a in args[:2] if isinstance(a, torch.Tensor)]
            devices = {t.device.type for t in tensors} | {str(kwargs.get("device", ""))[:4]}
            if "cpu" in {t.device.type for t in tensors} and ("cuda" in devices):
                self.host_copies += 1

    def _joins(self, func: Any) -> bool:
        """Autograd joining a split's gradients (`strict_ops.joins_view_gradients`) before any host read in
        the call: after one, the split's sizes may have come from input data, and the join is a gather."""
        return self._reads == 0 and strict_ops.joins_view_gradients(func)

    def launched(self, args: Any, kwargs: dict[str, Any]) -> None:
        """A Triton launch in a call, whose tensors a kernel may fill with what it reads (`steered_copies`)."""
        if self.recording:
            self._memory.launched(own_work.tensors_in([list(args), kwargs]))

    def follow(self, func: Any, args: Any, kwargs: dict[str, Any], result: Any) -> None:
        """After an op ran: a copy of outside data from or into part of a storage, once the call read
        tensor data on the host, is PyTorch doing a gather's work (`steered_copies`)."""
        if self.recording and self._joins(func):
            self._memory.joined(args, result)
            return
        if not self.recording or strict_ops.computes(func, args, kwargs):
            return
        if self._memory.steered(func, args, kwargs, result, read=self._reads > 0):
            self.compute_ops.add(f"{strict_ops.op_name(func)} of input data steered by a host read")


def _count_launches(backend: str = "triton") -> None:
    """Count Triton kernel launches (compiled or interpreted) and, for a CuTe candidate, its compiled
    programs' runs, wrapped before the candidate is imported: the judge requires its kernels to run, not
    merely to appear in the source."""
    if backend == "cute":
        _count_cute_programs()
    try:
        from triton.runtime import jit
    except ImportError:
        return
    kinds: list[Any] = [jit.JITFunction]
    try:
        from triton.runtime import interpreter

        kinds.append(interpreter.InterpretedFunction)
    except ImportError:
        pass
    for kind in kinds:
        if not getattr(kind.run, "_kernelevolve_counted", False):
            kind.run = _counting_launches(kind.run)
    _count_graph_replays()


def _count_cute_programs() -> None:
    """CuTe DSL runs every compiled host program (each launching its kernels), however it was compiled or
    called (`cute.compile`'s function, its `.to(device)` executor, a @cute.jit call), through one method:
    each run counts as a launch and is left out in the "off" call as a Triton launch is. Its writes are
    not recorded or replayed (its arguments are packed pointers): CuTe candidates get no stale or decoy
    calls (`kernel_share`)."""
    try:
        from cutlass.base_dsl.jit_executor import JitExecutor
    except ImportError:  # the DSL missing: no CuTe candidate loads
        return
    run = JitExecutor.run_compiled_program
    if not getattr(run, "_kernelevolve_counted", False):
        JitExecutor.run_compiled_program = _counting_launches(run, replayable=False)  # type: ignore[method-assign]


# The wrappers below keep the original in a closure, never a default argument: a function's `__defaults__`
# and `__kwdefaults__` would hand a candidate the uncounted original (`__closure__` is banned statically).
def _counting_launches(run: Any, graph: bool = False, replayable: bool = True) -> Any:
    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _LAUNCHES_OFF[0] and not kwargs.get("warmup"):
            return None  # the launch left out: what the output owes to the kernels shows as wrong values
        if graph:
            launch_replay.graph_replayed()  # what a replay writes is hidden: the stale check is inconclusive
        if _TRACING[0] is not None and not kwargs.get("warmup"):
            _TRACING[0].launched(args, kwargs)
        if launch_replay.active() and replayable and not graph and not kwargs.get("warmup"):
            result = launch_replay.around(run, self, args, kwargs)  # recorded or replayed (`kernel_share`)
        else:
            result = run(self, *args, **kwargs)
        if not kwargs.get("warmup"):
            _LAUNCHES[0] += 1  # a launch that raised did no work
        return result

    counted._kernelevolve_counted = True  # type: ignore[attr-defined]
    return counted


def _count_graph_replays() -> None:
    """A CUDA graph's replay relaunches the kernels captured in it (counted as they were captured): one
    launch, so a candidate replaying its kernels from a graph is seen to launch on every call."""
    import torch

    graph = getattr(torch.cuda, "CUDAGraph", None)
    replay = getattr(graph, "replay", None)
    if replay is not None and not getattr(replay, "_kernelevolve_counted", False):
        graph.replay = _counting_launches(replay, graph=True)  # type: ignore[union-attr]


def _count_thread_starts() -> None:
    """Count Python threads started from now on (every start goes through `_thread`), wrapped before the
    candidate is imported: the runner runs no thread of its own, so any is the candidate's."""
    import _thread
    import threading

    for owner, name in (
        (_thread, "start_new_thread"),
        (_thread, "start_joinable_thread"),  # Python 3.13
        (threading, "_start_new_thread"),
        (threading, "_start_joinable_thread"),
    ):
        start = getattr(owner, name, None)
        if start is not None and not getattr(start, "_kernelevolve_counted", False):
            setattr(owner, name, _counting_starts(start))


def _counting_starts(start: Any) -> Any:
    def counted(*args: Any, **kwargs: Any) -> Any:
        if not getattr(_HARNESS_STARTS, "active", False):
            _THREADS[0] += 1
        return start(*args, **kwargs)

    counted._kernelevolve_counted = True  # type: ignore[attr-defined]
    return counted


# Every way Python registers with PyTorch's dispatcher goes through these methods of the library handle
# (`torch.library`'s Library, custom_op, register_kernel, triton_op all hold one)
_REGISTERING_METHODS = frozenset(
    {
        "define",
        "def_",
        "def_legacy",
        "def_name_t_t",
        "def_schema_t_t",
        "impl",
        "impl_t_t",
        "impl_with_aoti_compile",
        "fallback",
        "fallback_fallthrough",
        "register_ad_inplace_or_view_fallback",
    }
)


def _count_dispatcher_registrations() -> None:
    """Record every op or kernel registered with PyTorch's dispatcher from now on, wrapped before the
    candidate is imported. A kernel registered for an ATen op replaces what that op computes for every
    caller: `x.clone()` computing relu, whose ops run below the strict trace (a dispatch mode is off while
    its handler runs the op), or the runner's own copies; a custom op can be named like any allowed op.
    The runner registers nothing after this; PyTorch's own lazy registrations are not recorded."""
    import torch

    handle = getattr(torch._C, "_DispatchModule", None)
    for name in _REGISTERING_METHODS:
        method = getattr(handle, name, None)
        if method is not None and not getattr(method, "_kernelevolve_counted", False):
            setattr(handle, name, _recording_registration(method, name))


def _recording_registration(method: Any, name: str) -> Any:
    def recorded(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _registered_by_torch():
            what = str(args[0]) if args else ""
            _REGISTRATIONS.append(f"{name}({what[:80]})")
        return method(self, *args, **kwargs)

    recorded._kernelevolve_counted = True  # type: ignore[attr-defined]
    return recorded


def _registered_by_torch() -> bool:
    """Whether the code that called into `torch.library` is PyTorch's own: modules register ops and kernels
    lazily, on import (`torch._inductor.runtime.triton_helpers`, which candidates may import) or on first
    use (`torch.func.vmap`'s batching rules). The candidate's code, or the standard library's calling it
    back, is not. A PyTorch function that calls back a Library method the candidate hands it passes as
    PyTorch's: with the static checks off that is the runner's word (they reject `torch.library`)."""
    import os
    import sys
    import types

    import torch

    root = os.path.dirname(torch.__file__) + os.sep
    library = (os.path.join(root, "library.py"), os.path.join(root, "_library") + os.sep)
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(library):
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename.startswith(root)


def left_behind_now(own_modes: int = 0) -> bool:
    """Whether candidate code, now returned, left hooks that would run inside the runner's own work
    (`left_behind`); what it left fails every judged request from then on. `own_modes`: the runner's own
    dispatch modes entered at this point."""
    if not _LEFT_BEHIND:
        _LEFT_BEHIND.extend(left_behind.changed(own_modes))
    return bool(_LEFT_BEHIND)


def judged_violation() -> tuple[str, str] | None:
    """What the candidate did that fails every request deciding its verdict (error name, feedback)."""
    if left_behind_now():
        return (
            "hooks_left",
            f"the candidate left code installed that runs inside the harness's own work after its calls "
            f"return ({', '.join(_LEFT_BEHIND[:3])}): the output copies and input refreshes between calls "
            "must not run candidate code; leave every mode, hook and patch within the call that made it",
        )
    if _THREADS[0]:
        return (
            "thread_spawn",
            f"the candidate started {_THREADS[0]} thread(s): work on another thread escapes the checks of a "
            "call (its PyTorch ops are not traced, and it can write outputs after the call returns); do the "
            "work in the kernels, on the calling thread",
        )
    if _REGISTRATIONS:
        return (
            "dispatcher_patched",
            f"the candidate registered with PyTorch's dispatcher ({', '.join(_REGISTRATIONS[:3])}): a kernel "
            "or op registered from Python changes what PyTorch ops compute for every caller; launch your "
            "kernels directly",
        )
    return None


@contextlib.contextmanager
def harness_thread_starts() -> Iterator[None]:
    """Threads started on this thread within the block are the harness's own, not counted: the
    precompile's compile pool (`precompile.compiles_in_parallel`), whose threads end with its block,
    before any checked call."""
    before = getattr(_HARNESS_STARTS, "active", False)
    _HARNESS_STARTS.active = True
    try:
        yield
    finally:
        _HARNESS_STARTS.active = before


def set_launch_mode(mode: str | None) -> dict[str, Any]:
    """The judge's kernel-share mode for the call about to run (None after it, which returns what the
    reply says of it): "off" leaves every launch out; "record", "stale", "decoy" are `launch_replay`'s."""
    fields = launch_replay.fields()
    _LAUNCHES_OFF[0] = mode == "off"
    launch_replay.set_mode(mode)
    return fields
