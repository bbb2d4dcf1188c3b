"""The Hydra application's conventions: structured configs, its help, where runs go, and every key the
README names existing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernelevolve.config import command_line_error, compose, slug, to_plain
from kernelevolve.paths import CONF_DIR, PLATFORMS_DIR
from kernelevolve.platforms import load_platform

REPO = Path(__file__).resolve().parent.parent
GROUPS = sorted(p.name for p in CONF_DIR.iterdir() if p.is_dir() and p.name != "hydra")


def _options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


def test_help_lists_every_group_and_its_options(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "kernelevolve", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.startswith("kernelevolve: ") and "Powered by Hydra" not in proc.stdout
    for group in GROUPS:
        assert f"{group}: {', '.join(_options(group))}" in proc.stdout
    assert "kernelevolve_schema" not in proc.stdout and list(tmp_path.iterdir()) == []


def test_every_shipped_platform_has_its_facts_and_its_settings() -> None:
    assert _options("platform") == sorted(p.stem for p in PLATFORMS_DIR.glob("*.yaml"))
    for name in ("l4", "l40s", "b200"):
        platform = load_platform(name)
        assert (
            platform.vendor == "nvidia"
            and platform.peak_bandwidth_gbs > 0
            and platform.peak_tflops["bf16"] > 0
        )
        assert "datasheet" in (PLATFORMS_DIR / f"{name}.yaml").read_text().lower() or name == "b200"


def test_a_platform_from_folders_outside_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "platforms").mkdir()
    (tmp_path / "conf" / "platform").mkdir(parents=True)
    facts = (PLATFORMS_DIR / "l4.yaml").read_text().replace("name: l4", "name: mygpu")
    (tmp_path / "platforms" / "mygpu.yaml").write_text(facts)
    settings = (CONF_DIR / "platform" / "l4.yaml").read_text().replace("name: l4", "name: mygpu")
    (tmp_path / "conf" / "platform" / "mygpu.yaml").write_text(settings)
    searchpath = f"hydra.searchpath=[file://{tmp_path / 'conf'}]"
    assert "platform=mygpu: no such option" in str(command_line_error(["+spec=softmax", "platform=mygpu"]))
    monkeypatch.setenv("KERNELEVOLVE_PLATFORMS", str(tmp_path / "platforms"))
    assert command_line_error(["+spec=softmax", "platform=mygpu", searchpath]) is None
    assert load_platform("mygpu").compute_units == 58


def test_the_schema_types_what_the_yaml_files_set() -> None:
    for group in ("platform", "search", "evaluator", "llm", "kb"):
        for option in _options(group):
            cfg = to_plain(compose(["+spec=softmax", f"{group}={option}"]))
            assert command_line_error(["+spec=softmax", f"{group}={option}"]) is None, (group, option, cfg)


def test_the_default_run_directory() -> None:
    cfg = compose(["+spec=kernelbench:1/23", "platform=h100"], return_hydra_config=True)
    assert re.fullmatch(r"runs/kernelbench-1-23-h100-\d{8}-\d{6}", cfg.hydra.run.dir)
    assert compose(["+spec=a/op.yaml", "run.name=x"], return_hydra_config=True).hydra.run.dir == "runs/x"
    assert compose(["resume=runs/old"], return_hydra_config=True).hydra.run.dir == "runs/old"
    assert slug("path/to/my_op.yaml") == "my_op"


# --------------------------------------------------------------------------------- the README's keys
_COMMAND = re.compile(r"(?:^|\s)(?:python -m kernelevolve|kernelevolve)\s+(.*)$")
_KEY = re.compile(r"^\+{0,2}([a-z_][a-z0-9_]*(?:\.[a-z0-9_]+)*)=(.*)$")
_NAMED = re.compile(
    r"(?<![\w/.+-])((?:platform|search|evaluator|llm|kb|run|kernelbench)\.[a-z_][a-z0-9_.]*[a-z0-9_])"
)
VERIFY_ONLY = {"kernelbench.judge", "kernelbench.judge_timeout_s"}  # kernelevolve.verify's own keys


def _readme_settings(text: str) -> list[tuple[list[str], str]]:
    """(the group choices of its command, a key) for each key=value of a kernelevolve command line and
    each `section.key` the prose names."""
    found: list[tuple[list[str], str]] = []
    for line in text.replace("\\\n", " ").splitlines():
        match = _COMMAND.search(line.split("#")[0])
        if not match:
            continue
        tokens = [t for t in match.group(1).split() if _KEY.match(t)]
        choices = [t for t in tokens if t.split("=")[0] in GROUPS]
        found += [(choices, _KEY.match(t).group(1)) for t in tokens]  # type: ignore[union-attr]
    found += [([], key) for key in _NAMED.findall(text)]  # any option of its group may have it
    return found


@pytest.mark.parametrize("document", ["README.md", "docs/configuration.md"])
def test_every_setting_the_document_names_exists(document: str) -> None:
    settings = _readme_settings((REPO / document).read_text())
    assert len(settings) > 10
    for choices, key in settings:
        if key == "spec" or key in VERIFY_ONLY or key.startswith("hydra"):
            continue
        if key in GROUPS:
            continue  # group=option: checked below
        section = key.partition(".")[0]
        tries = (
            [choices]
            if choices
            else [[f"{section}={o}"] for o in _options(section)]
            if section in GROUPS
            else [[]]
        )
        assert any(_has(key, tried) for tried in tries), (
            f"{document} names {key}, which the configuration lacks"
        )
    for choices, _ in settings:
        for choice in choices:
            group, _, option = choice.partition("=")
            assert option in _options(group), f"{document} names {choice}"


def _has(key: str, choices: list[str]) -> bool:
    from omegaconf import OmegaConf

    parent, _, leaf = key.rpartition(".")
    cfg = compose(["+spec=softmax", *choices])
    node = OmegaConf.select(cfg, parent) if parent else cfg
    return node is not None and leaf in node


@pytest.mark.slow
def test_multirun_jobs_go_under_the_run_root(tmp_path: Path) -> None:
    args = [
        "-m",
        "+spec=softmax",
        "platform=cpu",
        "search.operators=[template]",
        "search.termination.max_evaluations=1",
        "platform.eval.correctness_trials=1",
        "platform.eval.timing_trials=1",
        "platform.eval.measure_compile_baseline=false",
        "kb.enabled=false",
        "kb.record_past_wins=false",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "kernelevolve", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["runs"]  # no ./multirun, no ./outputs
    (job,) = (tmp_path / "runs").glob("multirun-*/0-softmax-cpu")
    assert (job / "results.json").is_file() and (job / "kernelevolve.log").is_file()
    assert "+spec=softmax" in (job / ".hydra" / "overrides.yaml").read_text()


def test_the_readme_stays_short() -> None:
    assert len((REPO / "README.md").read_text().split()) < 1500
