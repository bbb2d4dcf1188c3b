"""Screenshots of a run report and a sweep report in headless Chromium (issue 39).

    python experiments/report_screenshots/screenshot.py [--out experiments/report_screenshots]

Runs a small CPU search (the shipped softmax spec, 6 evaluations), builds a two-problem sweep folder
around it (one solved problem linked to that run, one failed problem whose run directory is elsewhere),
writes both report.html files, and screenshots each page, top to bottom, with Chromium's headless shell
(Debian: `apt-get install chromium-headless-shell`; `chromium --headless` works too). Reports need nothing
from the network: the browser opens them as files.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")
FAST = (
    "kb.enabled=false",
    "platform.eval.timing_trials=2",
    "platform.eval.correctness_trials=2",
    "platform.eval.warmup_trials=1",
    "platform.eval.measure_compile_baseline=false",
)


def browser() -> str | None:
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def screenshot(page: Path, png: Path, width: int = 1300, height: int = 3200) -> Path:
    """`page` rendered by headless Chromium into `png` (the first `height` pixels of it)."""
    exe = browser()
    if exe is None:
        raise RuntimeError(f"no headless browser here (looked for {', '.join(BROWSERS)})")
    args = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"]
    if exe.endswith("chromium-headless-shell"):
        args.remove("--headless")
    done = subprocess.run(
        [*args, f"--window-size={width},{height}", f"--screenshot={png}", page.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
    )
    if done.returncode != 0 or not png.is_file():
        raise RuntimeError(f"{exe} failed ({done.returncode}): {done.stderr[-1500:]}")
    return png


def make_reports(work: Path) -> tuple[Path, Path]:
    """(run report, sweep report) from a real CPU search."""
    from kernelevolve.api import optimize
    from kernelevolve.bench.sweep.report import write_sweep_report
    from kernelevolve.bench.sweep.run import record_from_results
    from kernelevolve.bench.sweep.summary_markdown import write_summary
    from kernelevolve.results.report import write_run_report

    result = optimize(
        "softmax",
        budget=6,
        operators=["template", "fusion_seed", "tune"],
        run_root=work / "runs",
        overrides=FAST,
        store=work / "store.sqlite",
    )
    run_report = write_run_report(result.run_dir)
    results = json.loads((result.run_dir / "results.json").read_text())
    sweep = work / "sweep"
    (sweep / "results").mkdir(parents=True)
    records = [
        {
            **record_from_results(results),
            "level": 1,
            "problem_id": 23,
            "problem": "L1/23",
            "name": "23_Softmax",
            "wall_s": 30.0,
            "run_dir": str(result.run_dir),
        },
        {
            **record_from_results({**results, "best": None}),
            "level": 1,
            "problem_id": 40,
            "problem": "L1/40",
            "name": "40_LayerNorm",
            "wall_s": 20.0,
            "run_dir": "/gpu-machine/runs/L1_40",
            "error": "no correct kernel in 6 evaluations",
        },
    ]
    for record in records:
        (sweep / "results" / f"L1_{record['problem_id']:03d}.json").write_text(json.dumps(record))
    write_summary(sweep)
    return run_report, write_sweep_report(sweep)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        run_report, sweep_report = make_reports(Path(tmp))
        args.out.mkdir(parents=True, exist_ok=True)
        for page, name, height in ((run_report, "run_report.png", 4600), (sweep_report, "sweep_report.png", 2600)):
            print(f"wrote {screenshot(page, args.out / name, height=height)}")
    return 0


if __name__ == "__main__":  # evaluation workers are spawned and re-import this file: keep the guard
    sys.exit(main())
