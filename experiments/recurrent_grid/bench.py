"""Times the recurrent seeds' own-kernels twin on KernelBench's LSTM/GRU problems (L3/35-42) with its steps
run per layer by the one-program-a-row persistent kernel or by the grid kernel at several tile sizes,
against PyTorch eager (cuDNN) at its default settings; checks each against the reference at exact fp32.

Usage (on a GPU): python experiments/recurrent_grid/bench.py PROBLEMS_JSONL OUT_DIR [--ids 35 39 ...]
Prints a table and writes one JSON line a variant to OUT_DIR/results.jsonl as it goes, so a cut-off run
keeps what it measured.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

import torch

from kernelevolve.variation.recurrent_seed import recurrent_candidate
from tests.source_module import load_source  # run from the repository's root (PYTHONPATH=.)

# BLOCK_U, BLOCK_K, warps, tl.dot (else broadcast products summed over K; any BLOCK_U)
GRID_TILES = [
    (16, 64, 4, True),
    (4, 64, 4, False),
    (4, 128, 4, False),
    (4, 128, 8, False),
    (4, 256, 4, False),
    (4, 256, 8, False),
    (2, 128, 4, False),
    (2, 256, 4, False),
    (2, 256, 8, False),
    (8, 128, 8, False),
    (8, 256, 8, False),
]


def _with_params(source: str, params: dict[str, object]) -> str:
    for name, value in params.items():
        rendered = repr(value)
        source, count = re.subn(rf"^{name} = [^#\n]*", f"{name} = {rendered}  ", source, flags=re.M)
        assert count == 1, name
    return source


class _WithoutBarrier:
    """A grid kernel launched with GRID_SYNC off: programs no longer wait for each other, so the output is
    wrong, and the time saved is what the barrier costs (a diagnostic row, never a candidate)."""

    def __init__(self, kernel: object) -> None:
        self.kernel = kernel

    def __getitem__(self, grid: tuple[int, ...]) -> object:
        launch = self.kernel[grid]  # type: ignore[index]
        return lambda *args, **kwargs: launch(*args, **{**kwargs, "GRID_SYNC": False})


def _time_ms(model: torch.nn.Module, inputs: list[torch.Tensor], warmup: int, trials: int) -> float:
    with torch.no_grad():
        for _ in range(warmup):
            model(*inputs)
        torch.cuda.synchronize()
        times = []
        for _ in range(trials):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(*inputs)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def _output(model: torch.nn.Module, inputs: list[torch.Tensor]) -> torch.Tensor:
    with torch.no_grad():
        torch.manual_seed(7)  # L3/35-38 draw their initial states in forward
        result = model(*inputs)
    return result[0] if isinstance(result, tuple) else result


def _exact_fp32(enabled: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = not enabled
    torch.backends.cudnn.allow_tf32 = not enabled


def bench_problem(
    code: str,
    name: str,
    directory: Path,
    out: Path,
    persistent: bool,
    tiles: list[tuple[int, int, int, bool]],
    without_barrier: bool = False,
) -> None:
    reference = load_source(code, directory, f"{name}_ref")
    twin_source, _ = recurrent_candidate(code, own_kernels=True)
    torch.manual_seed(0)
    ref_model = reference.Model(*reference.get_init_inputs()).cuda().eval()
    torch.manual_seed(1)
    inputs = [t.cuda() for t in reference.get_inputs()]
    _exact_fp32(True)
    expected = _output(ref_model, inputs)
    _exact_fp32(False)
    eager_ms = _time_ms(ref_model, inputs, 3, 10)
    default_error = (_output(ref_model, inputs) - expected).abs().max().item()
    rows = [dict(problem=name, variant="eager (cuDNN, default TF32)", ms=eager_ms, max_error=default_error)]
    variants: list[tuple[str, dict[str, object]]] = (
        [("persistent", {"RNN_STEPS": "persistent"})] if persistent else []
    )
    variants += [
        (
            f"grid U{u} K{k} w{w} {'dot' if dot else 'sum'}",
            {
                "RNN_STEPS": "grid",
                "RNN_GRID_BLOCK_U": u,
                "RNN_GRID_BLOCK_K": k,
                "RNN_GRID_WARPS": w,
                "RNN_GRID_DOT": dot,
            },
        )
        for u, k, w, dot in tiles
    ]
    if without_barrier:
        variants += [
            (f"{label} without barrier (diagnostic)", params) for label, params in variants if "grid" in label
        ]
    for index, (label, params) in enumerate(variants):
        row: dict[str, object] = dict(problem=name, variant=label)
        try:
            module = load_source(_with_params(twin_source, params), directory, f"{name}_v{index}")
            if "without barrier" in label:
                for kernel in ("_ke_lstm_grid_kernel", "_ke_gru_grid_kernel"):
                    setattr(module, kernel, _WithoutBarrier(getattr(module, kernel)))
            torch.manual_seed(0)
            model = module.ModelNew(*reference.get_init_inputs()).cuda().eval()
            started = time.perf_counter()
            got = _output(model, inputs)
            torch.cuda.synchronize()
            row["first_call_s"] = round(time.perf_counter() - started, 2)
            error = (got - expected).abs().max().item()
            row.update(
                max_error=error,
                correct=bool(torch.allclose(got, expected, atol=1e-4, rtol=1e-4)),
                ms=_time_ms(model, inputs, 3, 10),
            )
            row["speedup_vs_eager"] = round(eager_ms / float(row["ms"]), 3)  # type: ignore[arg-type]
        except Exception as error:  # a variant that fails to build or run is a row, not the end of the run
            row["error"] = f"{type(error).__name__}: {str(error)[:300]}"
        rows.append(row)
        with (out / "results.jsonl").open("a") as handle:
            handle.write(json.dumps(row) + "\n")
        print(
            f"{name:28s} {label:30s} {row.get('ms', float('nan')):9.3f} ms "
            f"x{row.get('speedup_vs_eager', 0):5.2f} err {row.get('max_error', float('nan')):.2e} "
            f"{'ok' if row.get('correct') else row.get('error', 'WRONG')}",
            flush=True,
        )
    print(
        f"{name:28s} {'eager':30s} {eager_ms:9.3f} ms  (default-settings error {default_error:.2e})",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problems", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--ids", type=int, nargs="*", default=list(range(35, 43)))
    parser.add_argument("--persistent", action="store_true", help="also the one-program-a-row kernel")
    parser.add_argument("--tiles", nargs="*", help="grid tiles as U:K:WARPS:dot|sum (default: GRID_TILES)")
    parser.add_argument(
        "--without-barrier",
        action="store_true",
        help="also each grid tile with its barrier off (timing only)",
    )
    args = parser.parse_args()
    tiles = GRID_TILES
    if args.tiles:
        tiles = [
            (int(u), int(k), int(w), dot == "dot") for u, k, w, dot in (t.split(":") for t in args.tiles)
        ]
    args.out.mkdir(parents=True, exist_ok=True)
    modules = Path(tempfile.mkdtemp(prefix="recurrent_grid_"))  # the variants' sources, kept off OUT_DIR
    problems = [json.loads(line) for line in args.problems.read_text().splitlines() if line.strip()]
    chosen = {p["problem_id"]: p for p in problems if p["level"] == 3 and p["problem_id"] in args.ids}
    print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}", flush=True)
    for problem_id in args.ids:
        problem = chosen[problem_id]
        bench_problem(
            problem["code"],
            f"L3_{problem['name']}",
            modules,
            args.out,
            args.persistent,
            tiles,
            args.without_barrier,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
