"""Check every CuTe template on a GPU: compile, compare with the reference, time next to eager and torch.compile.

Run on the GPU machine (H200 by default) from the repository root:

    python experiments/cute_gpu_check.py                      # all templates, the spec's GPU shapes
    python experiments/cute_gpu_check.py --templates softmax --trials 50 --platform h100 --shape-timeout 60

For each template in kernelevolve/variation/templates/cute the shipped spec of its family (operators/spec)
gives the dtype, tolerance and benchmark shapes. Every (template, shape) row runs in a child process of its
own with a time limit (--shape-timeout), so a hung kernel, a crash or a slow torch.compile costs one row,
not the run. Inside a row the cheap steps come first: compile time, max abs error and pass/fail at the
spec's tolerance, then the median CUDA-event latency (L2 flushed between trials) of the template, PyTorch
eager and, last, torch.compile (--no-compile skips it). The child saves the row after every step, so a row
that times out keeps what it measured and names the step it was in, with the child's last output lines.
JSON goes to $OUT/cute_gpu_check.json (or --out: a folder, or a path ending in .json) after every row;
a table is printed at the end. Status per row: ok, incorrect, error, timeout, crash or skipped
(not started: --deadline-s spent).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TEMPLATE_DIR = ROOT / "kernelevolve" / "variation" / "templates" / "cute"
HEADER = re.compile(r"^# kernelevolve-template: name=(\S+) family=(\S+) backend=(\S+)", re.MULTILINE)
FILE_NAME = "cute_gpu_check.json"
FINAL = ("ok", "incorrect", "error")  # statuses a child writes itself when it finishes a row


@dataclass(frozen=True)
class Job:
    """One row: a template at one shape of its family's spec."""

    path: Path
    name: str
    family: str
    shape: str
    dtype: str
    params: dict[str, Any]


def templates(selected: list[str]) -> list[tuple[Path, str, str]]:
    found = []
    for path in sorted(TEMPLATE_DIR.glob("*.py")):
        match = HEADER.search(path.read_text())
        if not match:
            continue
        name, family, _ = match.groups()
        if not selected or any(s in (path.stem, name, family) for s in selected):
            found.append((path, name, family))
    return found


def jobs_for(args: argparse.Namespace) -> list[Job]:
    from kernelevolve.platforms import load_platform
    from kernelevolve.specs.loading import resolve_spec

    platform = load_platform(args.platform)
    jobs = []
    for path, name, family in templates(args.templates):
        spec = resolve_spec(family, platform)
        for shape in spec.shapes:
            if not args.shapes or shape.name in args.shapes:
                jobs.append(Job(path, name, family, shape.name, spec.dtype, dict(shape.params)))
    return jobs


# ----------------------------------------------------------------------------------- parent


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Replace the file in one step, so a kill at any moment leaves the previous complete version."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2))
    os.replace(tmp, path)


def read_row(path: Path) -> dict[str, Any]:
    try:
        row = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return row if isinstance(row, dict) else {}


def tail(text: str, lines: int) -> list[str]:
    return text.splitlines()[-lines:] if lines > 0 else []


def run_child(command: list[str], row_file: Path, timeout_s: float, tail_lines: int = 20) -> dict[str, Any]:
    """Run one row's child; return the row it saved, with a status even when it hung or died.

    The child gets its own process group, so a timeout also ends what it started (torch.compile workers).
    """
    row_file.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    started = time.perf_counter()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        try:
            rc: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            rc = None
            # The leader is not reaped yet, so the group id is still its own.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.seek(0)
        output = log.read().decode(errors="replace")
    row = read_row(row_file)
    row["wall_s"] = round(time.perf_counter() - started, 2)
    if rc is None:
        row.update(status="timeout", timeout_s=timeout_s, output_tail=tail(output, tail_lines))
    elif row.get("status") not in FINAL:
        row.update(status="crash", returncode=rc, output_tail=tail(output, tail_lines))
    elif row["status"] != "ok":
        row["output_tail"] = tail(output, tail_lines)
    return row


def run_jobs(
    jobs: list[Job],
    command_for: Callable[[Job, Path], list[str]],
    out_file: Path,
    result: dict[str, Any],
    shape_timeout: float,
    deadline_s: float | None = None,
    tail_lines: int = 20,
) -> list[dict[str, Any]]:
    """Each job in a child under its time limit; the JSON is rewritten after every row."""
    started = time.perf_counter()
    rows: list[dict[str, Any]] = result.setdefault("rows", [])
    with tempfile.TemporaryDirectory(prefix="cute_gpu_check_") as tmp:
        for i, job in enumerate(jobs):
            base = {"template": job.name, "family": job.family, "dtype": job.dtype, "shape": job.shape}
            left = None if deadline_s is None else deadline_s - (time.perf_counter() - started)
            if left is not None and left < 1.0:
                row: dict[str, Any] = {**base, "params": job.params, "status": "skipped"}
            else:
                result["running"] = base
                write_json(out_file, result)
                timeout = shape_timeout if left is None else min(shape_timeout, left)
                row_file = Path(tmp) / f"row{i}.json"
                row = {
                    **base,
                    "params": job.params,
                    **run_child(command_for(job, row_file), row_file, timeout, tail_lines),
                }
            rows.append(row)
            result.pop("running", None)
            write_json(out_file, result)
            print(summary(row), flush=True)
    return rows


def child_command(args: argparse.Namespace) -> Callable[[Job, Path], list[str]]:
    script = str(Path(__file__).resolve())
    passed = {
        "--platform": args.platform,
        "--trials": args.trials,
        "--warmup": args.warmup,
        "--input-sets": args.input_sets,
        "--seed": args.seed,
    }
    flags = [str(part) for pair in passed.items() for part in pair]
    flags += ["--no-compile"] if args.no_compile else []

    def command(job: Job, row_file: Path) -> list[str]:
        return [
            sys.executable,
            script,
            "--child",
            str(job.path),
            job.shape,
            "--row-file",
            str(row_file),
            *flags,
        ]

    return command


def fmt(value: Any, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def summary(row: dict[str, Any]) -> str:
    head = f"{row['template']:28s} {row['shape']:22s} {row['status']:9s}"
    if row["status"] in ("timeout", "crash"):
        last = (row.get("output_tail") or [""])[-1]
        return f"{head} in stage {row.get('stage', '?')} after {row.get('wall_s')}s: {last[:100]}"
    if row["status"] in ("error", "skipped"):
        return f"{head} {row.get('error', '')[:100]}"
    return (
        f"{head} err={row['max_abs_error']:.2e} compile={row['compile_s']:.2f}s "
        f"cute={fmt(row.get('cute_ms'))}ms eager={fmt(row.get('eager_ms'))}ms "
        f"compiled={fmt(row.get('compiled_ms'))}ms x_eager={fmt(row.get('speedup_vs_eager'), '.2f')} "
        f"x_compile={fmt(row.get('speedup_vs_compile'), '.2f')}"
    )


def _failed_stage(row: dict[str, Any]) -> str:
    return row.get("stage", "?") if row["status"] in ("timeout", "crash", "error") else "-"


TABLE: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
    ("template", lambda r: r["template"]),
    ("shape", lambda r: r["shape"]),
    ("status", lambda r: r["status"]),
    ("stage", _failed_stage),
    ("max_err", lambda r: fmt(r.get("max_abs_error"), ".1e")),
    ("compile_s", lambda r: fmt(r.get("compile_s"), ".2f")),
    ("cute_ms", lambda r: fmt(r.get("cute_ms"))),
    ("eager_ms", lambda r: fmt(r.get("eager_ms"))),
    ("compiled_ms", lambda r: fmt(r.get("compiled_ms"))),
    ("x_eager", lambda r: fmt(r.get("speedup_vs_eager"), ".2f")),
    ("x_compile", lambda r: fmt(r.get("speedup_vs_compile"), ".2f")),
]


def table(rows: list[dict[str, Any]]) -> str:
    lines = [[name for name, _ in TABLE]] + [[cell(row) for _, cell in TABLE] for row in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(TABLE))]
    lines.insert(1, ["-" * w for w in widths])
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def out_path(out: str) -> Path:
    path = Path(out)
    return path if path.suffix == ".json" else path / FILE_NAME


def probe(timeout_s: float) -> dict[str, Any]:
    """Device and versions from a short child, so the parent never holds a CUDA context."""
    code = (
        "import json, torch, importlib.metadata as m\n"
        "ok = torch.cuda.is_available()\n"
        "print(json.dumps({'cuda': ok, 'device': torch.cuda.get_device_name() if ok else None,"
        " 'capability': list(torch.cuda.get_device_capability()) if ok else None, 'torch': torch.__version__,"
        " 'cutlass_dsl': m.version('nvidia-cutlass-dsl')}))"
    )
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout_s)
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, ValueError, IndexError) as exc:
        return {"cuda": False, "probe_error": f"{type(exc).__name__}: {exc}"}


# ----------------------------------------------------------------------------------- child


def max_abs_error(actual: Any, expected: Any) -> float:
    return float((actual.float() - expected.float()).abs().max().item()) if expected.numel() else 0.0


def measure_row(
    module: Any,
    spec: Any,
    shape: Any,
    args: argparse.Namespace,
    l2_bytes: int,
    save: Callable[[], None],
    row: dict[str, Any],
) -> None:
    """Fill `row` step by step, cheap steps first; `save()` after each so a kill keeps what was measured."""
    import torch

    from kernelevolve.specs.reference import apply_shape, build_model, load_reference, make_inputs, torch_dtype
    from kernelevolve.eval.timers import time_callable

    def stage(name: str) -> None:
        row["stage"] = name
        save()
        print(f"[{time.strftime('%H:%M:%S')}] {name}", flush=True)

    stage("inputs")
    reference = load_reference(spec.reference_source)
    apply_shape(reference, shape)
    dtype = torch_dtype(spec.dtype)
    model = build_model(reference.Model, reference, args.seed, "cuda", dtype)
    candidate = build_model(module.ModelNew, reference, args.seed, "cuda", dtype)
    input_sets = [make_inputs(reference, args.seed + i, "cuda", dtype) for i in range(args.input_sets)]

    stage("compile")
    started = time.perf_counter()
    candidate.compile_kernels(*input_sets[0])
    row["compile_s"] = round(time.perf_counter() - started, 3)

    stage("correctness")  # a kernel that never finishes hangs in this synchronize
    with torch.no_grad():
        worst, passed = 0.0, True
        for inputs in input_sets:
            expected = model(*inputs)
            actual = candidate(*inputs)
            torch.cuda.synchronize()
            worst = max(worst, max_abs_error(actual, expected))
            passed = passed and torch.allclose(actual, expected, atol=spec.atol, rtol=spec.rtol)
    row["max_abs_error"], row["correct"] = worst, bool(passed)

    timing = {"trials": args.trials, "warmup": args.warmup, "flush_l2": True, "l2_bytes": l2_bytes}
    stage("time_cute")
    row["cute_ms"] = time_callable(candidate, input_sets, "cuda", **timing).median_ms
    stage("time_eager")
    row["eager_ms"] = time_callable(model, input_sets, "cuda", **timing).median_ms
    row["speedup_vs_eager"] = row["eager_ms"] / row["cute_ms"]
    row["compiled_ms"] = row["speedup_vs_compile"] = None
    if not args.no_compile:
        stage("time_torch_compile")  # the slowest step (Inductor compiles per shape): last
        try:
            compiled = torch.compile(model)
            row["compiled_ms"] = time_callable(compiled, input_sets, "cuda", **timing).median_ms
            row["speedup_vs_compile"] = row["compiled_ms"] / row["cute_ms"]
        except Exception as exc:  # a torch.compile failure is reported, not fatal
            row["compile_baseline_error"] = f"{type(exc).__name__}: {exc}"[:500]
    row["stage"] = "done"


def child_main(args: argparse.Namespace) -> int:
    path, shape_name = Path(args.child[0]), args.child[1]
    row_file = Path(args.row_file)
    row: dict[str, Any] = {}

    def save() -> None:
        write_json(row_file, row)

    row["stage"] = "setup"
    save()
    import torch

    from kernelevolve.backends.cute import BACKEND, describe_exception
    from kernelevolve.platforms import load_platform
    from kernelevolve.specs.loading import resolve_spec

    try:
        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA device: this script needs a GPU")
        platform = load_platform(args.platform)
        match = HEADER.search(path.read_text())
        assert match, f"{path} has no template header"
        spec = resolve_spec(match.group(2), platform)
        shape = next(s for s in spec.shapes if s.name == shape_name)
        BACKEND.prepare_process("cuda")
        row["stage"] = "load"
        save()
        module = BACKEND.load(path.read_text(), f"cute_gpu_check_{path.stem}")
        measure_row(module, spec, shape, args, platform.l2_bytes, save, row)
        row["status"] = "ok" if row["correct"] else "incorrect"
    except Exception as exc:
        row["error"] = f"{type(exc).__name__}: {describe_exception(exc)}"
        row["error_class"] = BACKEND.classify_error(
            exc, "load" if row.get("stage") == "load" else "run"
        ).value
        row["traceback"] = traceback.format_exc()[-3000:]
        row["status"] = "error"
    save()
    return 0


# ----------------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--templates", nargs="*", default=[], help="file stems, template names or families")
    parser.add_argument("--shapes", nargs="*", default=[], help="only these shape names")
    parser.add_argument(
        "--platform", default="h200", help="platform yaml giving the spec's shapes and L2 size"
    )
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--input-sets", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    parser.add_argument("--shape-timeout", type=float, default=90.0, help="seconds per (template, shape) row")
    parser.add_argument("--deadline-s", type=float, default=None, help="start no row after this many seconds")
    parser.add_argument("--tail-lines", type=int, default=20, help="child output lines kept for a failed row")
    parser.add_argument(
        "--out", default=os.environ.get("OUT", "."), help=f"folder for {FILE_NAME}, or a .json path"
    )
    parser.add_argument("--child", nargs=2, metavar=("TEMPLATE", "SHAPE"), help=argparse.SUPPRESS)
    parser.add_argument("--row-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child_main(args)

    env = probe(120.0)
    if not env.get("cuda"):
        print(f"no CUDA device: this script needs a GPU ({env})", file=sys.stderr)
        return 2
    out_file = out_path(args.out)
    result: dict[str, Any] = {
        **{k: env.get(k) for k in ("device", "capability", "torch", "cutlass_dsl")},
        "platform": args.platform,
        "trials": args.trials,
        "shape_timeout_s": args.shape_timeout,
        "complete": False,
        "rows": [],
    }
    rows = run_jobs(
        jobs_for(args),
        child_command(args),
        out_file,
        result,
        args.shape_timeout,
        args.deadline_s,
        args.tail_lines,
    )
    result["complete"] = True
    write_json(out_file, result)
    print(table(rows))
    print(f"wrote {out_file}")
    return 0 if rows and all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
