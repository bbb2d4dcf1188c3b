"""What keeps a judge's device memory growing over one evaluation's runner calls (session 36).

Runs one evaluation of a 1 GiB tanh problem (6 correctness trials) in this process and, after every runner
call (`RemoteCandidate.request`), prints the judge's allocated GiB as it is, after a garbage collection
(tensors held in reference cycles), and after `torch.cuda.ipc_collect()` (blocks a runner let go of that
sit in CUDA IPC's limbo). `FREE=gc`, `FREE=ipc` or `FREE=both` keeps that release after each call, so the
evaluation's peak shows what it is worth.
Usage on the device: PYTHONPATH=. python3 experiments/adversarial_gpu/judge_growth.py [none|gc|ipc|both]...
"""

from __future__ import annotations

import gc
import sys
import time

import torch

from kernelevolve.eval import harness, remote
from kernelevolve.platforms import load_platform
from kernelevolve.types import Candidate, EvalRequest, EvalSettings, KernelSpec, ShapeCase
from tests.gpu import TANH_CANDIDATE, tanh_reference

GIB = 2**30
TANH = TANH_CANDIDATE
REFERENCE = tanh_reference(256 * 1024 * 1024)


def run(free: str) -> None:
    original = remote.RemoteCandidate.request
    rows: list[str] = []

    def traced(self: remote.RemoteCandidate, message: dict[str, object]) -> dict[str, object]:
        reply = original(self, message)
        as_is = torch.cuda.memory_allocated() / GIB
        gc.collect()
        after_gc = torch.cuda.memory_allocated() / GIB
        torch.cuda.ipc_collect()
        after_ipc = torch.cuda.memory_allocated() / GIB
        rows.append(
            f"{message.get('op')}/{message.get('launches')} {as_is:.1f} {after_gc:.1f} {after_ipc:.1f}"
        )
        return reply

    def released(self: remote.RemoteCandidate, message: dict[str, object]) -> dict[str, object]:
        reply = original(self, message)
        if free in ("gc", "both"):
            gc.collect()
        if free in ("ipc", "both"):
            torch.cuda.ipc_collect()
        return reply

    remote.RemoteCandidate.request = traced if free == "none" else released  # type: ignore[method-assign]
    platform = load_platform("h100")
    spec = KernelSpec(name="big_tanh", reference_source=REFERENCE, shapes=(ShapeCase("default"),))
    settings = EvalSettings(
        correctness_trials=6, timing_trials=10, warmup_trials=2, measure_compile_baseline=False
    )
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    started = time.perf_counter()
    report = harness.evaluate(EvalRequest(Candidate(TANH, "triton", "t"), spec, "h100", settings), platform)
    peak = (torch.cuda.max_memory_allocated() - before) / GIB
    print(
        f"free={free}: {report.status.value} {report.error_name} peak {peak:.1f} GiB, "
        f"{time.perf_counter() - started:.1f} s, left {(torch.cuda.memory_allocated() - before) / GIB:.1f} GiB"
    )
    if rows:
        print("  after each call: op/launches, GiB as is, after gc.collect, after ipc_collect")
        for row in rows:
            print("  " + row)
    remote.RemoteCandidate.request = original  # type: ignore[method-assign]


if __name__ == "__main__":
    for mode in sys.argv[1:] or ["none", "gc", "ipc"]:
        run(mode)
