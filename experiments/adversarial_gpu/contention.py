"""Which neighbour slows the evaluation that holds the device lock?

In a sweep the stages an evaluation runs under the device lock take 3-10 times as long as they do alone
(README, session 27), while the host's CPUs sit idle. This judge evaluates eval_phases.py's honest kernel
REPEATS times per size while one kind of neighbour runs on the same GPU outside the lock, one scenario
after another:

  alone        nothing else
  ctx_churn    a process creating and destroying CUDA contexts in a loop (driver API, no torch)
  torch_churn  processes that import torch, make a CUDA context and a tensor, and exit, two at a time
               (what a runner's start and death do)
  alloc_churn  a process allocating and freeing 16 GiB of device memory in a loop (no kernels)
  twin_judge   a second judge evaluating the same kernel (the sweep's --parallel 2 on one GPU)

Usage on the device: PYTHONPATH=. python3 experiments/adversarial_gpu/contention.py [REPEATS] > "$OUT/contention.txt"
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))
from eval_phases import KERNEL, REFERENCE  # noqa: E402

from kernelevolve.backends.triton import BACKEND  # noqa: E402
from kernelevolve.eval import harness  # noqa: E402
from kernelevolve.platforms import load_platform  # noqa: E402
from kernelevolve.types import Candidate, EvalRequest, EvalSettings, KernelSpec, ShapeCase  # noqa: E402

CTX_CHURN = r"""
import ctypes, time
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
dev = ctypes.c_int(); cuda.cuDeviceGet(ctypes.byref(dev), 0)
n = 0; started = time.time()
while True:
    ctx = ctypes.c_void_p()
    rc = cuda.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev)
    ptr = ctypes.c_uint64()
    cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(1 << 20))
    cuda.cuMemFree_v2(ptr)
    cuda.cuCtxDestroy_v2(ctx)
    n += 1
    if n % 20 == 0:
        print(f"ctx_churn {n} contexts, {(time.time() - started) / n:.3f} s each, rc {rc}", flush=True)
"""

TORCH_ONE = "import torch; x = torch.empty(1 << 20, device='cuda'); torch.cuda.synchronize()"

ALLOC_CHURN = r"""
import ctypes, time
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
dev = ctypes.c_int(); cuda.cuDeviceGet(ctypes.byref(dev), 0)
ctx = ctypes.c_void_p(); cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev); cuda.cuCtxSetCurrent(ctx)
n = 0; started = time.time()
while True:
    ptr = ctypes.c_uint64()
    rc = cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(16 << 30))
    cuda.cuMemFree_v2(ptr)
    n += 1
    if n % 50 == 0:
        print(f"alloc_churn {n} allocations, {(time.time() - started) / n:.3f} s each, rc {rc}", flush=True)
"""


def _torch_churn() -> subprocess.Popen:
    loop = f"while true; do {sys.executable} -c \"{TORCH_ONE}\" & {sys.executable} -c \"{TORCH_ONE}\"; wait; done"
    return subprocess.Popen(["bash", "-c", loop], start_new_session=True)


def _neighbour(scenario: str, size: str) -> subprocess.Popen | None:
    if scenario == "ctx_churn":
        return subprocess.Popen([sys.executable, "-c", CTX_CHURN], start_new_session=True)
    if scenario == "torch_churn":
        return _torch_churn()
    if scenario == "alloc_churn":
        return subprocess.Popen([sys.executable, "-c", ALLOC_CHURN], start_new_session=True)
    if scenario == "twin_judge":
        env = {**os.environ, "CONTENTION_TWIN": size}
        return subprocess.Popen([sys.executable, __file__, "40"], env=env, start_new_session=True,
                                stdout=subprocess.DEVNULL)
    return None


def _stop(proc: subprocess.Popen | None) -> None:
    if proc is not None:
        import signal

        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def _spec(label: str, m: int, n: int) -> KernelSpec:
    return KernelSpec(
        name=f"scale_{label}",
        reference_source=REFERENCE,
        shapes=(ShapeCase("default", {"M": m, "N": n}),),
        reference_precision="framework_default",
    )


SIZES = {"4MiB": (1024, 1024), "256MiB": (8192, 8192)}
SHOWN = ("correctness", "timing", "timing_setup", "timed_checks", "release", "kill", "free_gc", "free_cache")


def main(repeats: int) -> None:
    device, name = "cuda:0", "h200"
    BACKEND.prepare_process(device)
    platform = load_platform(name)
    options = yaml.safe_load(Path(f"conf/platform/{name}.yaml").read_text())["eval"]
    settings = EvalSettings(**{**options, "strict": False})

    def evaluate(label: str, tag: str) -> tuple[float, dict[str, float]]:
        m, n = SIZES[label]
        source = KERNEL + f"\n# variant {label} {tag}\n"
        request = EvalRequest(Candidate(source, "triton", f"{label}-{tag}"), _spec(label, m, n), platform.name, settings)
        started = time.perf_counter()
        report = harness.evaluate(request, platform, device)
        if report.status.value != "ok":
            print(label, tag, report.status, report.feedback[:300], flush=True)
        return time.perf_counter() - started, dict(report.phase_s)

    twin = os.environ.get("CONTENTION_TWIN")
    if twin:  # the neighbour judge: evaluate until killed
        for i in range(10_000):
            evaluate(twin, f"twin{i}")
        return

    wall, phases = evaluate("4MiB", "warm")
    print(f"# first evaluation {wall:.2f} s (zygote start)", flush=True)
    print(f"{'scenario':>12} {'size':>7} {'wall':>6} {'locked':>6}  " + " ".join(f"{s:>12}" for s in SHOWN))
    for scenario in ("alone", "ctx_churn", "torch_churn", "alloc_churn", "twin_judge", "alone"):
        for label in SIZES:
            neighbour = _neighbour(scenario, label)
            time.sleep(3.0 if scenario != "twin_judge" else 20.0)  # let it get going (a judge's zygote: ~14 s)
            rows: dict[str, list[float]] = defaultdict(list)
            walls = []
            try:
                for i in range(repeats):
                    wall, phases = evaluate(label, f"{scenario}{i}")
                    walls.append(wall)
                    for key, seconds in phases.items():
                        rows[key].append(seconds)
            finally:
                _stop(neighbour)
            locked = sum(statistics.mean(rows[k]) for k in SHOWN if rows.get(k))
            cells = " ".join(f"{statistics.mean(rows[s]):12.3f}" if rows.get(s) else f"{'-':>12}" for s in SHOWN)
            print(f"{scenario:>12} {label:>7} {statistics.mean(walls):6.2f} {locked:6.2f}  {cells}", flush=True)
            others = {k: round(statistics.mean(v), 3) for k, v in rows.items() if k not in SHOWN}
            print(f"{'':>12} other stages: {others}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
