"""The runner: the one process that imports a candidate. It builds ModelNew, computes outputs, times calls.

It decides nothing. Inputs and output slots are tensors the judge owns (`shared_tensors`); the runner
writes each output into its slot and answers in JSON only (`runner_channel`), so whatever the candidate
does to this process (patching torch, our modules, the clocks, the channel) can change what it reports
about itself, never the judge's comparison, the reference's outputs or the baselines, which live in a
process that never imports candidate code. A runner serves one candidate and is then killed with
everything it started (`runner_client`).

Requests (pickled by the judge; trusted direction):
  {"op": "load", ...}   sandbox this process, bind the clocks, import the candidate, precompile
  {"op": "build", ...}  ModelNew for one shape, from the judge's constructor call and perturbed state
  {"op": "call", ...}   one forward on judge inputs; outputs copied into judge slots
  {"op": "time", ...}   the timing loop; every call's output copied into a ring of judge slots and a
                        completion counter advanced, so the judge can stop this process at any moment
                        and check the last finished call
  {"op": "profile", ...} / {"op": "compile_only", ...}: measurements for the judge's report
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import sys
import traceback
from multiprocessing.connection import Connection
from typing import Any

from kernelevolve.backends.loading import hide_scratch, kernel_module_name
from kernelevolve.eval import (
    host_reads,
    launch_replay,
    left_behind,
    own_work,
    runner_outputs,
    runner_trace,
    shared_tensors,
    timed_state,
)
from kernelevolve.eval.argument_structure import rebuild_arguments
from kernelevolve.eval.forward_probe import FORWARD_DEFERRED, ForwardProbe
from kernelevolve.eval.own_work import collecting, quiet
from kernelevolve.eval.runner_trace import _LAUNCHES, OpTrace, _count_launches, _count_thread_starts
from kernelevolve.eval.shared_tensors import open_tree
from kernelevolve.eval.timed_guard import TimedViolation, lower_floor, plain_output_call, plain_tuples
from kernelevolve.eval.upstream_copy import own_upstream

log = logging.getLogger(__name__)


def serve(conn: Connection) -> None:
    """Answer the judge until it hangs up or sends {"op": "exit"}."""
    from kernelevolve.eval.runner_channel import SEQUENCE, send_reply

    runner = _Runner()
    own_work.pause_collector()  # collections only within candidate code: a finalizer's work is its own
    while True:
        try:
            message = pickle.loads(conn.recv_bytes())  # noqa: S301 - from the judge, never from a candidate
        except (EOFError, OSError):
            return
        op = message.get("op")
        if op == "exit":
            return
        handler = getattr(runner, f"op_{op}", None)
        if handler is None:
            reply: dict[str, Any] = {"ok": False, "status": "runtime_error", "error_name": "unknown_op"}
        else:
            try:
                reply = handler(message)
            except _Failure as failure:
                reply = failure.reply
            except BaseException as exc:  # noqa: BLE001 - the candidate's fault, reported as data
                reply = runner.failure(exc, "run", f"running {op}")
            try:
                shared_tensors.end_request()
            except Exception as exc:  # noqa: BLE001 - the device failed under the candidate's kernels
                reply = runner.failure(exc, "run", f"finishing {op}")
            violation = runner_trace.judged_violation()
            if violation is not None and op in _JUDGED_OPS:
                reply = _failed("runtime_error", *violation)
        send_reply(conn, {**reply, SEQUENCE: message.get(SEQUENCE)})
        sys.stdout.flush()
        sys.stderr.flush()


# Requests whose replies decide a verdict: a thread the candidate started fails them
_JUDGED_OPS = frozenset({"load", "build", "call", "state", "time"})


class _Failure(Exception):
    def __init__(self, reply: dict[str, Any]) -> None:
        super().__init__(reply.get("feedback", ""))
        self.reply = reply


class _Runner:
    def __init__(self) -> None:
        self.device = "cpu"
        self.dtype: Any = None
        self.backend: Any = None
        self.module: Any = None
        self.model_new: Any = None
        self.module_name = ""
        self.models: dict[int, Any] = {}
        self.launch_floor: dict[int, int] = {}  # per model: the fewest launches of a checked call
        self.forward_floor: dict[int, int] = {}  # per training step: those of its forward (`forward_probe`)
        self.moving: dict[int, set[str]] = {}  # per model: the state its checked calls moved (`module_state`)
        self.probes: dict[int, ForwardProbe] = {}  # per training step: its forward's outputs, seen early
        self.precision: Any = None

    # ------------------------------------------------------------------------------ requests
    def op_load(self, message: dict[str, Any]) -> dict[str, Any]:
        from kernelevolve.backends import get_backend
        from kernelevolve.eval import timers
        from kernelevolve.specs import precision
        from kernelevolve.specs.reference import torch_dtype

        self.device = message["device"]
        self.dtype = torch_dtype(message["dtype"])
        self.backend = get_backend(message["backend"])
        self.backend.prepare_process(self.device)
        timers.bind_clocks()  # before candidate code can patch the clocks
        _count_launches(self.backend.name)
        _count_thread_starts()
        runner_trace._count_dispatcher_registrations()
        host_reads.watch_host_reads()
        left_behind.snapshot()  # what runs in the runner's own work, before candidate code can add to it
        self.module_name = kernel_module_name(str(message["candidate_id"]))
        if message.get("compile_only"):
            return self._compile_only(message)
        try:
            with collecting():
                self.module = self.backend.load(message["source"], self.module_name)
        except (Exception, SystemExit) as exc:
            return self.failure(exc, "load", "loading the kernel")
        self.model_new = getattr(self.module, "ModelNew", None)
        if not isinstance(self.model_new, type):
            return _failed("compile_error", "missing_ModelNew", "the source does not define class ModelNew")
        if message.get("training") is not None:  # a training spec: ModelNew's forward and backward, one call
            from kernelevolve.specs.training import training_model

            self.model_new = training_model(self.model_new, message["training"])
        # the candidates' precision, the reference's, for this process's whole life
        self.precision = precision.reference_precision(str(message.get("precision", precision.EXACT_FP32)))
        self.precision.__enter__()
        with collecting():
            precompile_s = self._precompile(message) if message.get("precompile") else 0.0
        return {"ok": True, "sandbox": dict(_SANDBOX), "precompile_s": precompile_s}

    def op_build(self, message: dict[str, Any]) -> dict[str, Any]:
        from kernelevolve.specs import reference

        shape = message["shape"]
        reference.apply_shape_to_copy(vars(self.module), shape)
        try:
            with collecting():
                model = self._construct(message)
        except (Exception, SystemExit) as exc:
            return self.failure(exc, "run", f"building ModelNew{message.get('where', '')}")
        self.models[message["index"]] = model
        return {"ok": True}

    def _construct(self, message: dict[str, Any]) -> Any:
        from kernelevolve.specs import reference

        model = reference.construct(
            self.model_new,
            message["init"],
            self.device,
            self.dtype,
            on_device=message["on_device"],
            mode=message.get("mode", "as_built"),
        )
        reference.apply_constant_state(model, message["state"])
        if message.get("grads_of") is not None:
            step: Any = model  # a training step (`specs.training.TrainingStep`)
            step.bind(message["grads_of"])
            step.probe = self.probes[message["index"]] = ForwardProbe()
        return model

    def op_state(self, message: dict[str, Any]) -> dict[str, Any]:
        """Copy ModelNew's counterparts of the reference's changed buffers into the judge's slots."""
        slots = [ref.open() for ref in message["slots"]]
        found = self._counterparts(message["index"], message["names"], slots)
        with quiet():
            for slot, tensor in zip(slots, found, strict=True):
                if tensor is not None:
                    slot.copy_(tensor.detach().to(device=slot.device, dtype=slot.dtype).reshape(slot.shape))
        self._finish_device_work()
        return {"ok": True, "found": [tensor is not None for tensor in found]}

    def _counterparts(self, index: int, names: list[Any], like: list[Any]) -> list[Any]:
        """ModelNew's counterparts of the reference's state `names` (shaped as `like`), None where it has
        none or one is not exactly a tensor (`own_work.exact`)."""
        from kernelevolve.eval.module_state import current

        found = self._counterpart_names(index, names, like)
        with quiet():
            tensors = [None if name is None else current(self.models[index], name) for name in found]
            return [t if t is None or own_work.exact(t, parameters=True) else None for t in tensors]

    def _counterpart_names(self, index: int, names: list[Any], like: list[Any]) -> list[str | None]:
        from kernelevolve.eval.module_state import counterpart_names, signature

        wanted = [(str(name), signature(value)) for name, value in zip(names, like, strict=True)]
        with collecting():
            return counterpart_names(self.models[index], wanted, frozenset(self.moving.get(index, ())))

    def op_release(self, message: dict[str, Any]) -> dict[str, Any]:
        """Drop every judge tensor this runner mapped, so the judge can free them (`Runner.release_shared`)."""
        import gc

        from kernelevolve.eval.shared_tensors import drop_mapped

        self.models.clear()
        drop_mapped()
        # Young cycles only: a full pass costs this process ~0.1 s, under the device lock. A tensor an old
        # cycle still holds stays allocated in the judge, which `device_memory.device_memory_stranded` notices.
        gc.collect(1)
        self._finish_device_work()
        return {"ok": True}

    def op_end_checks(self, message: dict[str, Any]) -> dict[str, Any]:
        """Drop the judge's device tensors the checked calls mapped, so the judge can free them before timing
        allocates its own (`RemoteCandidate.end_checks`)."""
        from kernelevolve.eval.shared_tensors import drop_mapped_device

        drop_mapped_device()
        self._finish_device_work()
        return {"ok": True}

    def _finish_device_work(self) -> None:
        """Before answering: the judge reads what was written, or frees what was dropped, on the reply."""
        if self.device.startswith("cuda"):
            import torch

            torch.cuda.synchronize()

    def op_call(self, message: dict[str, Any]) -> dict[str, Any]:
        import torch

        from kernelevolve.eval import correctness, tensor_guards

        model = self.models[message["index"]]
        inputs = open_tree(message["inputs"])  # a training step's `dy`: a copy it may write (`upstream_copy`)
        inputs = own_upstream(inputs) if message["index"] in self.probes else inputs
        slots = [ref.open() for ref in message["slots"]]
        poison = tensor_guards.poison_byte(message.get("poison"))
        tensor_guards.poison_allocator([s for s in slots if s.device.type != "meta"], poison)
        launches_before = _LAUNCHES[0]
        trace = OpTrace() if message.get("strict") else contextlib.nullcontext()
        if isinstance(trace, OpTrace):
            trace.begin_call(own_work.tensors_in(inputs))
        runner_trace.set_launch_mode(launch_mode := message.get("launches"))  # `kernel_share`'s calls
        from kernelevolve.eval import module_state

        with quiet(), torch.no_grad():  # its state before the call: a counterpart may carry another name
            before = module_state.snapshot(model, parameters=False)
        try:
            with torch.no_grad(), trace, collecting():
                correctness.seed_forward(message["seed"])
                got = plain_tuples(model(*inputs))  # a namedtuple read by tuple's C methods
        except (Exception, SystemExit) as exc:
            return self.failure(exc, "run", f"running ModelNew{message.get('where', '')}")
        finally:
            replay = runner_trace.set_launch_mode(None)
        if runner_trace.left_behind_now():  # before the copies below could run it (`serve` says why)
            return {"ok": False}
        with quiet():  # nothing of the candidate's runs below (`own_work`)
            input_leaves = own_work.tensors_in(inputs)  # by type: the candidate held these lists
            if not all(own_work.exact(t) for t in input_leaves):
                return _failed("runtime_error", "input_type", "the call changed the class of an input tensor")
            if (deferred := self._probe_changed(message["index"])) is not None:
                return TimedViolation(FORWARD_DEFERRED, deferred).as_reply()
            leaves, tensors = runner_outputs.describe(got, input_leaves)
            tensor_guards.synchronize_current_stream([t for t in tensors if t is not None] + input_leaves)
            runner_outputs.fill_slots(tensors, slots)
            tensor_guards.synchronize_current_stream(slots)
            self.moving.setdefault(message["index"], set()).update(module_state.changed(model, before))
        launches = _LAUNCHES[0] - launches_before
        index = message["index"]
        lower_floor(self.launch_floor, index, launches, launch_mode)  # timed calls launch what checks did
        if (probe := self.probes.get(index)) is not None:  # and the forward timed alone, what its forward did
            lower_floor(self.forward_floor, index, probe.launches_at - launches_before, launch_mode)
        reply = {"ok": True, "leaves": leaves, "launches": launches, **replay}
        if isinstance(trace, OpTrace):
            reply |= trace.fields()
        return reply

    def op_time(self, message: dict[str, Any]) -> dict[str, Any]:
        from kernelevolve.eval import correctness, input_refresh, timers
        from kernelevolve.eval.timed_guard import TimedGuard, put_back_state

        model, forward_only = self.models[message["index"]], message.get("pass") == "forward"
        launch_replay.forget()  # the last record (`kernel_share`) is not needed past the checks
        if forward_only:  # a training step's forward alone
            model = model.forward_pass
        model = own_work.collecting_call(model)  # the collector runs within the calls alone
        sets = [[ref.open() for ref in refs] for refs in message["input_sets"]]
        structure = message["structure"]  # each set's leaves placed back into the call's arguments
        patterns = [[None if ref is None else ref.open() for ref in row] for row in message["patterns"]]
        plan: list[int] = message["plan"]
        forward_seed = int(message["forward_seed"])
        ring = [[ref.open() for ref in refs] for refs in message["ring"]]
        counter = message["counter"].open()
        # what the checked calls launched (a training step's forward alone: what their forwards did)
        floors = self.forward_floor if forward_only else self.launch_floor
        counted = self.backend.name in launch_replay.COUNTED_LAUNCHES
        needed = floors.get(message["index"], 0) if counted else 0
        # the state the reference's calls move, put back before each call as the judge does (`module_state`)
        start = open_tree(message.get("state_values", []))  # tensors, numbers, plain containers of them
        owner = self.models[message["index"]]  # the module itself: `model` is wrapped above
        state = self._counterpart_names(message["index"], message.get("state_names", []), start)
        left = [open_tree(slot) for slot in message.get("state_slots", [])]  # what each call leaves
        kept = timed_state.compared(state, start, self.moving.get(message["index"], set()))
        marks: Any = message["state_marks"].open() if left else None
        probe = None if forward_only else self.probes.get(message["index"])
        guard = TimedGuard(ring[0], needed, bool(message.get("strict")), probe)
        made = [0]  # calls whose output reached the ring: the judge's count to hold the counter to

        def inputs_for(call: int) -> list[Any]:
            with quiet():
                leaves = sets[call % len(sets)]
                input_refresh.apply(leaves, patterns[plan[call]])
                guard.before(leaves)
                put_back_state(owner, state, start)
                correctness.seed_forward(input_refresh.forward_seed(forward_seed, call))  # outside the window
                arguments = rebuild_arguments(structure, leaves)
                return arguments if probe is None else own_upstream(arguments)  # `dy` a copy it may write

        def after_call(call: int, output: Any) -> None:
            with quiet():
                for slot, leaf in zip(ring[call % len(ring)], guard.after(call, output), strict=True):
                    slot.copy_(leaf)
                if left:  # the state the call left, read as `put_back_state` reads it (`timed_state`)
                    timed_state.record(owner, kept, start, left[call % len(left)], marks[call % len(left)])
                made[0] += 1

        def completed(calls: int) -> None:
            with quiet():
                counter[0] = calls  # host memory the judge reads while this process is stopped

        observer = timers.CallObserver(after_call, completed)
        try:
            with guard.trace():
                stats = timers.time_callable(
                    plain_output_call(model),
                    inputs_for,
                    self.device,
                    trials=message["trials"],
                    warmup=message["warmup"],
                    flush_l2=message["flush_l2"],
                    l2_bytes=message["l2_bytes"],
                    launch_cover_us=message["launch_cover_us"],
                    race=message.get("race"),
                    settle=message.get("settle"),
                    warmup_enough_ms=message["warmup_enough_ms"],
                    observer=observer,
                )
        except TimedViolation as violation:
            return violation.as_reply()
        except (Exception, SystemExit) as exc:
            return self.failure(exc, "run", f"timing ModelNew{message.get('where', '')}")
        timing = {
            "samples_ms": observer.samples_ms,
            "windows_s": observer.windows_s,  # the judge takes its own stops out of them (`call_windows`)
            "host_ms": observer.host_ms,
            "method": stats.method,
            "stopped_by": stats.stopped_by,
            "cover_us": observer.cover_us,
        }
        return {"ok": True, "stats": timing, "calls": made[0], **guard.trace_fields()}

    def op_profile(self, message: dict[str, Any]) -> dict[str, Any]:
        """A winner's GPU time split (`time_split`): a measurement for the report, never a verdict."""
        from kernelevolve.backends import get_backend
        from kernelevolve.eval.time_split import profile_request
        from kernelevolve.platforms import load_platform
        from kernelevolve.types import EvalRequest

        request = EvalRequest.from_json(message["request"])
        get_backend(request.candidate.backend).prepare_process(message["device"])
        split = profile_request(request, load_platform(message["platform"]), message["device"])
        return {"ok": True, "split": split}

    # ------------------------------------------------------------------------------ helpers
    def _compile_only(self, message: dict[str, Any]) -> dict[str, Any]:
        from kernelevolve.eval.compile_stage import compile_only_fields

        fields = compile_only_fields(message["source"], message["spec"], message["arch"], self.backend)
        return {"ok": False, **fields}

    def _precompile(self, message: dict[str, Any]) -> float:
        """Compile every shape's kernels before the judge takes the device; returns the seconds spent."""
        import time

        from kernelevolve.eval.precompile import precompile_builds, precompile_passes
        from kernelevolve.specs import reference

        def builder(shape: Any, init: Any, mode: str) -> Any:
            def build() -> Any:
                reference.apply_shape_to_copy(vars(self.module), shape)
                return reference.construct(
                    self.model_new, init, self.device, self.dtype, on_device=True, mode=mode
                )

            return build

        started = time.perf_counter()
        builds = [
            (builder(s["shape"], s["init"], s.get("mode", "as_built")), s["placeholders"])
            for s in message["precompile"]["shapes"]
        ]
        precompile_passes(
            message["precompile"]["how"],
            lambda faked: precompile_builds(builds, self.device, self.dtype, fake_device_work=faked),
        )
        return time.perf_counter() - started

    def _probe_changed(self, index: int) -> str | None:
        probe = self.probes.get(index)
        return None if probe is None else probe.changed()

    def failure(self, exc: BaseException, stage: str, doing: str) -> dict[str, Any]:
        from kernelevolve.eval.feedback import exception_fields

        fields = exception_fields(exc, self.backend, stage, doing, self.module_name)
        return {"ok": False, **fields}


_SANDBOX: dict[str, bool] = {}  # what took effect at the runner's start


def _failed(status: str, error_name: str, feedback: str) -> dict[str, Any]:
    return {"ok": False, "status": status, "error_name": error_name, "feedback": feedback}


def _sandbox(
    writable_dirs: list[str], host_memory_bytes: int | None, single_process: bool = False
) -> dict[str, bool]:
    """Before the candidate is imported: no new privileges, writes only where the judge allows (Landlock,
    where the kernel has it), a host memory ceiling, and with `single_process` no new processes (seccomp).
    What took effect is reported to the judge."""
    from kernelevolve.eval import containment, landlock, seccomp

    containment.no_new_privileges()
    limited = containment.limit_memory(host_memory_bytes) if host_memory_bytes else False
    try:
        restricted = landlock.restrict_writes(writable_dirs) if writable_dirs else False
    except (OSError, RuntimeError) as exc:  # reported to the judge as unrestricted, with the reason logged
        log.warning("writes not restricted: %s", exc)
        restricted = False
    alone = seccomp.block_new_processes() if single_process else False
    return {"writes_restricted": bool(restricted), "memory_limited": bool(limited), "single_process": alone}


def _private_temp(directory: str) -> None:
    """Temporary files in the runner's own folder: the sandbox keeps the host's temp folder read-only."""
    import tempfile

    os.makedirs(directory, exist_ok=True)
    os.environ["TMPDIR"] = os.environ["KERNELEVOLVE_SCRATCH"] = directory
    tempfile.tempdir = None  # recomputed from TMPDIR on next use


def main(device: str = "cpu", sandbox: dict[str, Any] | None = None) -> None:
    """Entry point in a freshly forked runner (`runner_zygote`): the channel is the fd named in the
    environment. The sandbox goes on first, while this process has one thread; on a GPU the CUDA context
    is then made at once, while the runner waits as the spare."""
    fd = int(os.environ.pop("KERNELEVOLVE_RUNNER_FD"))
    conn = Connection(fd)
    if sandbox is not None and sandbox.get("private_tmp"):
        _private_temp(str(sandbox["private_tmp"]))
    hide_scratch()  # kernel code reads the environment: no variable of ours tells it the judge runs it
    if sandbox is not None:
        _SANDBOX.update(
            _sandbox(
                list(sandbox.get("writable_dirs", [])),
                sandbox.get("host_memory_bytes"),
                bool(sandbox.get("single_process")),
            )
        )
    if device.startswith("cuda"):
        try:
            import torch

            torch.empty(1, device=device)
        except Exception:  # noqa: BLE001 - the load request reports a device that does not work
            traceback.print_exc()
    try:
        serve(conn)
    except BaseException:  # noqa: BLE001 - nothing to report to: the judge sees the channel close
        traceback.print_exc()
    finally:
        os._exit(0)
