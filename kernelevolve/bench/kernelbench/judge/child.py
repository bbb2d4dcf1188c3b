"""The judge's own process: KernelBench's evaluator on one kernel, its answer as JSON.

    python -m kernelevolve.bench.kernelbench.judge.child REQUEST.json RESPONSE.json

`process.judge_kernel` starts it; the response is written only here, so a process that dies or hangs
leaves none and the parent records why. Everything KernelBench raises becomes the response's `error`.
KernelBench prints freely: the parent sends this process's output to a log file, never to its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kernelevolve.bench.kernelbench.judge.stubs import install_missing_stubs
from kernelevolve.bench.kernelbench.judge.values import (
    COMPILE_ERROR,
    CORRECT,
    INCORRECT,
    JUDGE_FAILED,
    JudgeRequest,
)
from kernelevolve.results.format import first_line


def judge(request: JudgeRequest) -> dict[str, Any]:
    """KernelBench's verdict on the request's kernel, as the response's fields."""
    try:
        stubbed = install_missing_stubs()
        sys.path.insert(0, request.kernelbench_src)
        from kernelbench import eval as kb_eval
        from kernelbench import timing as kb_timing
    except BaseException as exc:  # an import error, or whatever its module level raises
        return {
            "status": JUDGE_FAILED,
            "error": f"cannot import kernelbench.eval from {request.kernelbench_src}: {_error(exc)}",
        }
    try:
        response = _evaluate(request, kb_eval, kb_timing)
    except BaseException as exc:  # KernelBench asserts CUDA, raises for a backend/vendor mismatch...
        response = {"status": JUDGE_FAILED, "error": _error(exc)}
    return {**response, "stubbed": list(stubbed)}


def _evaluate(request: JudgeRequest, kb_eval: Any, kb_timing: Any) -> dict[str, Any]:
    import torch

    device = torch.device(request.device if ":" in request.device else f"{request.device}:0")
    with _gpu_to_itself(str(device)):
        result = kb_eval.eval_kernel_against_ref(
            original_model_src=request.reference_source,
            custom_model_src=request.kernel_source,
            seed_num=request.seed,
            num_correct_trials=request.correct_trials,
            num_perf_trials=request.perf_trials,
            measure_performance=True,
            timing_method=request.timing_method,
            device=device,
            backend=request.backend,
            precision=kb_eval.get_torch_dtype_from_string(request.precision),
            # its own reference timing there repeats measure_ref_program_time's, taken below
            check_for_excessive_speedup=False,
        )
        if result is None:  # KernelBench's answer to a lock-file error while compiling
            return {"status": JUDGE_FAILED, "error": "KernelBench returned no result (a compile lock error)"}
        response = _result_fields(result)
        if response["correct"]:
            stats = kb_timing.measure_ref_program_time(
                request.name,
                request.reference_source,
                num_trials=request.perf_trials,
                timing_method=request.timing_method,
                device=device,
                precision=request.precision,
            )
            if stats is None:  # it printed the error and returned None
                response["error"] = "measure_ref_program_time failed (its output has why)"
            else:
                response["reference_ms"] = float(stats["mean"])
    return response


def _result_fields(result: Any) -> dict[str, Any]:
    """A KernelExecResult's verdict, time and reason, in plain values."""
    metadata = dict(getattr(result, "metadata", None) or {})
    compiled, correct = bool(result.compiled), bool(result.correctness)
    runtime = float(getattr(result, "runtime", -1.0) or -1.0)
    if not compiled:
        status = COMPILE_ERROR
        reason = _named(metadata, "compilation_error")
    elif not correct:
        status = INCORRECT
        reason = _named(metadata, "runtime_error") or str(metadata.get("correctness_issue") or "")
        if metadata.get("max_difference"):
            reason += f" (max difference {', '.join(map(str, metadata['max_difference']))})"
    else:
        status, reason = CORRECT, ""
        if "error_during_performance" in metadata:
            reason = f"timing failed: {metadata['error_during_performance']}"
    return {
        "status": status,
        "compiled": compiled,
        "correct": correct,
        "runtime_ms": runtime if correct and runtime > 0 else None,
        "error": first_line(reason),
        "correctness_trials": str(metadata.get("correctness_trials") or ""),
        "hardware": str(metadata.get("hardware") or ""),
    }


def _named(metadata: dict[str, Any], key: str) -> str:
    name, text = metadata.get(f"{key}_name"), metadata.get(key)
    return ": ".join(str(part) for part in (name, text) if part)


@contextlib.contextmanager
def _gpu_to_itself(device: str) -> Iterator[None]:
    """Our evaluations' per-GPU lock, held while KernelBench runs: its timings then share the GPU with
    none of ours (a sweep's other problems). Nothing to hold without CUDA (KernelBench then says so)."""
    import torch

    if not (device.startswith("cuda") and torch.cuda.is_available()):
        yield
        return
    from kernelevolve.eval.device_lock import hold_device

    with hold_device(device):
        yield


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {first_line(str(exc))}" if str(exc) else type(exc).__name__


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(
            "usage: python -m kernelevolve.bench.kernelbench.judge.child REQUEST.json RESPONSE.json",
            file=sys.stderr,
        )
        return 2
    request = JudgeRequest.from_json(json.loads(Path(argv[0]).read_text()))
    response = judge(request)
    out = Path(argv[1])
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(response, default=str))
    tmp.replace(out)  # whole or absent: a reader never sees half a verdict
    sys.stdout.flush()
    sys.stderr.flush()
    # no interpreter teardown: a candidate's threads or CUDA state must not hang the exit after the answer
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
