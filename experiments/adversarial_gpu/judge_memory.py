"""Device memory of one judged evaluation, per harness stage, against the problem's input and output bytes.

Runs `harness.evaluate` in this process (the judge; its runner is forked from the zygote as in a sweep) for
KernelBench problems whose inputs are gigabytes, with a one-kernel Triton candidate, and prints the judge's
peak allocated bytes per stage and the GPU's peak use by every process (nvidia-smi, which sees the runner).
With `MEMORY_TRACE=1` the CUDA allocator's history is recorded and, per problem, the live blocks at the judge's
peak (or at an out-of-memory error) are listed by size with the harness frame that allocated each.
Usage on the device: [PLATFORM=h100] [MEMORY_TRACE=1] python3 experiments/adversarial_gpu/judge_memory.py \
  .kbdata/problems.jsonl 1/5 1/22
"""

from __future__ import annotations

import collections
import contextlib
import os
import subprocess
import sys
import threading
import time

import torch

from kernelevolve.bench.kernelbench import problems as kernelbench
from kernelevolve.eval import harness, stages
from kernelevolve.platforms import load_platform
from kernelevolve.types import Candidate, EvalRequest
from kernelevolve.verify import platform_settings

CANDIDATE = """
import torch
import triton
import triton.language as tl


@triton.jit
def _pointwise(src, dst, scale, n, TANH: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(src + offsets, mask=mask)
    if TANH:
        e = tl.exp(-2.0 * tl.abs(x))
        y = (1.0 - e) / (1.0 + e)
        y = tl.where(x < 0, -y, y)
    else:
        y = x * scale
    tl.store(dst + offsets, y, mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()

    def forward(self, x, scale=None):
        out = torch.empty_like(x)
        n = x.numel()
        _pointwise[(triton.cdiv(n, 4096),)](
            x, out, 1.0 if scale is None else float(scale), n, TANH=scale is None, BLOCK=4096
        )
        return out
"""

GIB = float(1 << 30)


def _gpu_used_gib() -> float:
    text = subprocess.run(
        ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return float(text.split()[0]) / 1024 if text.strip() else float("nan")


class _Sampler:
    def __init__(self) -> None:
        self.peak, self._stop = 0.0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _gpu_used_gib())
            time.sleep(0.2)

    def __enter__(self) -> _Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _where(frames: list[dict[str, object]]) -> str:
    """The innermost kernelevolve frames (and the reference's), the allocation's harness site."""
    own = [
        f"{str(f['filename']).rsplit('/', 1)[-1]}:{f['line']} {f['name']}"
        for f in frames
        if "kernelevolve" in str(f["filename"]) or "reference" in str(f["filename"])
    ]
    return " < ".join(own[:4]) or "?"


def _peak_blocks(snapshot: dict[str, object], device: int = 0) -> tuple[float, list[tuple[int, str]]]:
    """Replay the allocator's trace: the most bytes live at once and the blocks live at that moment."""
    live: dict[int, tuple[int, str]] = {}
    best, best_live, total = 0, {}, 0
    for event in snapshot["device_traces"][device]:  # type: ignore[index]
        action, addr, size = event["action"], event.get("addr"), event.get("size", 0)
        if addr is None:  # an out-of-memory or snapshot event: no block
            continue
        if action == "alloc":
            live[addr] = (size, _where(event.get("frames", [])))
            total += size
            if total > best:
                best, best_live = total, dict(live)
        elif action == "free_completed" and addr in live:
            total -= live.pop(addr)[0]
    return best / GIB, sorted(best_live.values(), reverse=True)


def _report_blocks(label: str) -> None:
    snapshot = torch.cuda.memory._snapshot()
    peak, blocks = _peak_blocks(snapshot)
    grouped: collections.Counter[str] = collections.Counter()
    counts: collections.Counter[str] = collections.Counter()
    for size, where in blocks:
        grouped[where] += size
        counts[where] += 1
    print(f"  {label}: {peak:.1f} GiB live at the traced peak; by site:")
    for where, size in grouped.most_common(12):
        print(f"    {size / GIB:6.2f} GiB in {counts[where]:3d} block(s)  {where}")
    torch.cuda.memory._record_memory_history(enabled=None)
    torch.cuda.memory._record_memory_history(max_entries=200_000)


def main(path: str, keys: list[str]) -> None:
    stage_peaks: dict[str, float] = {}
    original = stages._phase

    @contextlib.contextmanager
    def measured(phases: dict[str, float], name: str):  # type: ignore[no-untyped-def]
        torch.cuda.reset_peak_memory_stats()
        with original(phases, name):
            yield
        stage_peaks[name] = max(stage_peaks.get(name, 0.0), torch.cuda.max_memory_allocated() / GIB)

    harness._phase = stages._phase = measured  # evaluate's stages and the checks and timing
    name = os.environ.get("PLATFORM", "h200")
    platform, settings = load_platform(name), platform_settings(name)
    trace = os.environ.get("MEMORY_TRACE") == "1"
    if trace:
        torch.cuda.memory._record_memory_history(max_entries=200_000)
    print("problem | input GiB (= output) | status | judge peak GiB per stage | GPU peak GiB (all processes)")
    for key in keys:
        level, number = (int(part) for part in key.split("/"))
        spec = kernelbench.problem_to_spec(kernelbench.load_problem(path, level, number))
        stage_peaks.clear()
        request = EvalRequest(Candidate(CANDIDATE, "triton", "memory_probe"), spec, name, settings)
        with _Sampler() as sampler:
            report = harness.evaluate(request, platform, "cuda:0")
        module: dict[str, object] = {}
        exec(compile(spec.reference_source, "<reference>", "exec"), module)
        inputs = module["get_inputs"]()  # type: ignore[operator]
        in_gib = sum(t.numel() * t.element_size() for t in inputs if isinstance(t, torch.Tensor)) / GIB
        per_stage = ", ".join(f"{stage} {peak:.1f}" for stage, peak in stage_peaks.items())
        print(
            f"L{key} | {in_gib:.1f} | {report.status.value} {report.error_name} | {per_stage} | "
            f"{sampler.peak:.1f}"
        )
        if not report.ok:
            print("  ", report.feedback[:1500].replace("\n", "\n   "))
        if trace:
            _report_blocks(f"L{key}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
