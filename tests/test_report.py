"""HTML reports: a real run's report.html (plots, best kernel, tables), the CLI, the sweep report from a
summary.json written by kernelevolve.bench.sweep.summary, and the table-only fallback without matplotlib."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")
torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from kernelevolve.api import OptimizeResult, optimize  # noqa: E402
from kernelevolve.bench.sweep.report import write_sweep_report  # noqa: E402
from kernelevolve.bench.sweep.run import record_from_results  # noqa: E402
from kernelevolve.bench.sweep.summary_markdown import write_summary  # noqa: E402
from kernelevolve.results.report import ReportError, write_report, write_run_report  # noqa: E402

FAST = (
    "kb.enabled=false",
    "platform.eval.timing_trials=2",
    "platform.eval.correctness_trials=2",
    "platform.eval.warmup_trials=1",
    "platform.eval.measure_compile_baseline=false",
)
PNG = re.compile(r"data:image/png;base64,([A-Za-z0-9+/=]+)")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OptimizeResult]:
    """A real CPU search on the shipped softmax spec: template and fusion seeds, then tuning."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KERNELEVOLVE_CACHE", str(tmp_path_factory.mktemp("cache")))
        yield optimize(
            "softmax",
            budget=4,
            operators=["template", "fusion_seed", "tune"],
            run_root=tmp_path_factory.mktemp("runs"),
            overrides=FAST,
        )


def _images(text: str) -> list[bytes]:
    return [base64.b64decode(m) for m in PNG.findall(text)]


def test_run_report_has_plots_tables_and_the_best_kernel(run: OptimizeResult) -> None:
    path = write_run_report(run.run_dir)
    assert path == run.run_dir / "report.html"
    text = path.read_text()
    assert run.best_id and run.best_id in text
    for heading in (
        "The winner beside the reference",
        "Roofline position",
        "Search graph",
        "Candidates (",
        "Versions",
    ):
        assert heading in text
    images = _images(text)  # fitness over time, speedup per shape, evaluations by operator
    assert len(images) == 3 and all(image.startswith(b"\x89PNG\r\n\x1a\n") for image in images)
    # The winner's source beside the reference's, escaped, and one row per shape.
    winner = text[text.index('<pre id="winner-source">') :]
    assert "@triton.jit" in winner and "class ModelNew" in winner
    reference = text[text.index('<pre id="reference-source">') : text.index('<pre id="winner-source">')]
    assert "class Model(nn.Module)" in reference and "ModelNew" not in reference
    assert "<td>cpu</td>" in text and "<td>cpu_long</td>" in text
    results = json.loads((run.run_dir / "results.json").read_text())
    assert f'<td class="l">{results["evaluations"]} (' in text
    # The labelled, interactive graph: a node per candidate, an edge label per operator, the script.
    export = json.loads((run.run_dir / "graph_export.json").read_text())
    assert text.count('<g class="node') == len(export["nodes"])
    assert text.count('<g class="edge">') == len(export["edges"])
    assert all(f">{e['operator']}</text>" in text for e in export["edges"])
    assert 'id="graph-svg"' in text and 'addEventListener("wheel"' in text
    # The sortable candidate table: one row per evaluation, the best marked.
    table = text[text.index('id="candidate-table"') :]
    assert table.count('<tr id="c-') == results["evaluations"]
    assert f'<tr id="c-{run.best_id}" class="best">' in table
    assert "table.sortable" in text
    # Versions the run recorded.
    assert (
        results["versions"]["torch"] == torch.__version__
        and f'<td class="l">{torch.__version__}</td>' in text
    )
    assert "as recorded by the run" in text
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")  # nothing fetched


def test_report_cli_and_folder_detection(run: OptimizeResult, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    done = subprocess.run(
        [sys.executable, "-m", "kernelevolve.results.report", str(run.run_dir), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert out.is_file() and run.best_id in out.read_text()
    with pytest.raises(ReportError, match="neither a run directory"):
        write_report(tmp_path)
    bad = subprocess.run(
        [sys.executable, "-m", "kernelevolve.results.report", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "neither a run directory" in bad.stderr


def test_sweep_report_renders_summary_json(run: OptimizeResult, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    (sweep / "results").mkdir(parents=True)
    results = json.loads((run.run_dir / "results.json").read_text())
    solved = {
        **record_from_results(results),
        "level": 1,
        "problem_id": 23,
        "problem": "L1/23",
        "name": "23_Softmax",
        "wall_s": 9.0,
        "run_dir": str(run.run_dir),
    }
    failed = {
        **record_from_results({**results, "best": None}),
        "level": 1,
        "problem_id": 40,
        "problem": "L1/40",
        "name": "40_LayerNorm",
        "wall_s": 4.0,
        "error": "no correct kernel in 4 evaluations",
        "run_dir": "/elsewhere/L1_40",
    }
    for record in (solved, failed):
        (sweep / "results" / f"L1_{record['problem_id']:03d}.json").write_text(json.dumps(record))
    summary = write_summary(sweep)  # writes summary.json
    assert summary["overall"]["correctness_rate"] == 0.5
    path = write_sweep_report(sweep)
    text = path.read_text()
    assert path == sweep / "report.html"
    assert "50%" in text and "fast_1.5" in text and "23_Softmax" in text and "40_LayerNorm" in text
    assert "no_correct_kernel" in text
    images = _images(text)
    assert len(images) == 2 and all(image.startswith(b"\x89PNG") for image in images)
    assert write_report(sweep) == path
    # Each problem links to its run's report (relative), lists its candidates, and the runs' versions show.
    href = os.path.relpath(run.run_dir / "report.html", sweep)
    assert f'<a href="{href}">run report</a>' in text and (sweep / href).is_file()
    assert 'title="/elsewhere/L1_40"' in text and "not here" in text
    assert "L1/23: " in text and 'id="problem-table"' in text
    assert f'<td class="l">{torch.__version__}</td>' in text and "as recorded by the sweep" in text


def test_report_without_matplotlib_still_has_the_tables(run: OptimizeResult, tmp_path: Path) -> None:
    out = tmp_path / "plain.html"
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"  # import matplotlib now raises ImportError
        "from kernelevolve.results.report import write_run_report\n"
        f"write_run_report({str(run.run_dir)!r}, {str(out)!r})\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=dict(os.environ)
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert not PNG.search(text) and "plots need matplotlib" in text
    assert run.best_id and run.best_id in text and "<td>cpu_long</td>" in text
    assert 'id="graph-svg"' in text and 'id="candidate-table"' in text  # neither needs matplotlib


BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")


def test_reports_render_in_headless_chromium(run: OptimizeResult, tmp_path: Path) -> None:
    """Both reports open as files in headless Chromium (skipped where none is installed; the screenshots
    in experiments/report_screenshots/ were taken by its script)."""
    import shutil

    exe = next((path for name in BROWSERS if (path := shutil.which(name))), None)
    if exe is None:
        pytest.skip("no headless Chromium here (Debian: apt-get install chromium-headless-shell)")
    sweep = tmp_path / "sweep"
    (sweep / "results").mkdir(parents=True)
    results = json.loads((run.run_dir / "results.json").read_text())
    record = {**record_from_results(results), "level": 1, "problem_id": 23, "problem": "L1/23"}
    record.update(name="23_Softmax", wall_s=1.0, run_dir=str(run.run_dir))
    (sweep / "results" / "L1_023.json").write_text(json.dumps(record))
    write_summary(sweep)
    for page in (write_run_report(run.run_dir, tmp_path / "run.html"), write_sweep_report(sweep)):
        png = tmp_path / f"{page.stem}.png"
        args = [exe, "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1200,2000"]
        if not exe.endswith("headless-shell"):
            args.insert(1, "--headless")
        done = subprocess.run(
            [*args, f"--screenshot={png}", page.resolve().as_uri()],
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0 and png.is_file(), done.stderr[-2000:]
        data = png.read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 20_000  # a page, not a blank


def test_run_report_renders_candidates_that_were_never_timed(run: OptimizeResult, tmp_path: Path) -> None:
    """A candidate that failed before timing has no latency for any shape (a crash, a mismatch): its row
    shows dashes, and the report is still written."""
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run.run_dir, copy)
    graph = copy / "graph.jsonl"
    lines = []
    for line in graph.read_text().splitlines():
        record = json.loads(line)
        if record.get("type") == "report" and record["id"] != run.best_id:
            record["report"] = {**record["report"], "status": "worker_crash", "latency": {}}
        lines.append(json.dumps(record))
    graph.write_text("\n".join(lines) + "\n")
    text = write_run_report(copy).read_text()
    assert 'id="candidate-table"' in text and "worker_crash" in text
