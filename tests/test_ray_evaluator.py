"""RayEvaluator on a tiny local Ray cluster: logical GPUs for pinning, a killed actor mid-search."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from kernelevolve.platforms import Platform, load_platform
from kernelevolve.types import Candidate, EvalRequest, EvalSettings, KernelSpec, Status

ray = pytest.importorskip("ray")

from kernelevolve.eval.ray_actor import child_devices, cluster_accelerators  # noqa: E402
from kernelevolve.eval.ray_evaluator import ACTOR_NAME_PREFIX, RayEvaluator  # noqa: E402  (after the importorskip)
from tests.hydra_config import FAST_RUN, compose_run_config  # noqa: E402
from tests.kernelbench_data import KERNELBENCH  # noqa: E402


def test_child_devices_pin_the_ray_assigned_gpu() -> None:
    h200 = load_platform("h200")
    assert child_devices(h200, ["3"]) == ["cuda:3"]
    assert child_devices(h200, ["3"], cpu_only=True) is None
    assert child_devices(load_platform("cpu"), ["1"]) is None
    with pytest.raises(RuntimeError, match="assigned this actor none"):
        child_devices(h200, [])


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Two CPUs, two logical GPUs and one custom resource; the baseline cache kept out of ~/.cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KERNELEVOLVE_CACHE", str(tmp_path_factory.mktemp("ray-cache")))
        ray.init(
            num_cpus=2,
            num_gpus=2,
            resources={"vendor_x": 1},
            include_dashboard=False,
            logging_level="ERROR",
            log_to_driver=False,
        )
        try:
            yield
        finally:
            ray.shutdown()


def _our_actors() -> list[str]:
    return [name for name in ray.util.list_named_actors() if name.startswith(ACTOR_NAME_PREFIX)]


@pytest.mark.ray
def test_cluster_accelerators_counts_what_fits(ray_cluster: None) -> None:
    assert cluster_accelerators(1.0, None, {}) == 2
    assert cluster_accelerators(0.5, None, {}) == 4
    assert cluster_accelerators(1.0, None, {"vendor_x": 1}) == 1  # custom resource is the bottleneck
    assert cluster_accelerators(1.0, "H200", {}) == 0  # no node of that accelerator type


@pytest.mark.ray
def test_each_actor_sees_only_its_own_gpu(
    ray_cluster: None,
    cpu_platform: Platform,
    fast_settings: EvalSettings,
    add_spec: KernelSpec,
    add_kernel: Callable[..., str],
) -> None:
    evaluator = RayEvaluator(
        cpu_platform,
        fast_settings,
        num_gpus_per_actor=1,
        num_cpus_per_actor=0.5,
        max_in_flight_per_actor=2,
        cpu_compile_workers=1,
    )
    try:
        assert (
            evaluator.capacity == 6
        )  # two GPU actors (one per logical GPU) + one CPU actor, two in flight each
        *infos, compile_info = evaluator.actor_info()
        assert compile_info["gpu_ids"] == []
        assert len(infos) == 2
        for info in infos:
            assert len(info["gpu_ids"]) == 1
            assert info["cuda_visible_devices"] == info["gpu_ids"][0]
            assert info["devices"] == ["cpu"]  # platform cpu: the evaluation child gets no GPU at all
        assert sorted(info["gpu_ids"][0] for info in infos) == ["0", "1"]
        assert len(_our_actors()) == 3
        spec = KernelSpec(
            add_spec.name, add_spec.reference_source, shapes=add_spec.shapes[:1], backends=("triton", "cute")
        )
        sources = [add_kernel(), add_kernel(result="y + x"), add_kernel(result="x + y * 2.0")]
        futures = [
            evaluator.submit(EvalRequest(Candidate(s, "triton", "test"), spec, "cpu", fast_settings))
            for s in sources
        ]
        reports = [f.result(timeout=240) for f in futures]
        assert [r.status for r in reports] == [Status.OK, Status.OK, Status.INCORRECT]
        assert [r.candidate_id for r in reports] == [Candidate(s, "triton", "test").id for s in sources]
        assert all("-main" in r.worker for r in reports)  # host:pid:device@actor-name
        # CuTe is compile-only on platform cpu: such work goes to the CPU actor, which cannot time it either
        cute = Candidate(sources[0], "cute", "test")
        report = evaluator.submit(EvalRequest(cute, spec, "cpu", fast_settings)).result(timeout=240)
        assert report.worker.endswith("-compile0-0") and report.status is not Status.OK
        with pytest.raises(ValueError, match="platform"):
            evaluator.submit(
                EvalRequest(Candidate(sources[0], "triton", "test"), spec, "h200", fast_settings)
            )
    finally:
        evaluator.close()
    deadline = time.monotonic() + 20
    while _our_actors() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _our_actors() == []


def _wait_until_dead(actor: Any) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            ray.get(actor.info.remote(), timeout=5)
        except ray.exceptions.RayActorError:
            return
        time.sleep(0.2)
    raise AssertionError("the killed actor still answers")


@pytest.mark.ray
def test_profile_runs_on_an_actor_and_a_lost_actor_gives_none(
    ray_cluster: None,
    cpu_platform: Platform,
    fast_settings: EvalSettings,
    add_spec: KernelSpec,
    add_kernel: Callable[..., str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    request = EvalRequest(Candidate(add_kernel(), "triton", "test"), add_spec, "cpu", fast_settings)
    evaluator = RayEvaluator(cpu_platform, fast_settings)  # platform cpu: one actor
    try:
        (actor,) = evaluator.actors()
        # On the CPU LocalEvaluator.profile gives None (no device time to split), in the actor as here.
        assert ray.get(actor.profile.remote(request.to_json()), timeout=240) is None
        assert evaluator.profile(request) is None
        with pytest.raises(ValueError, match="platform"):
            evaluator.profile(replace(request, platform="h200"))
        name = _our_actors()[0]
        ray.kill(actor, no_restart=True)
        _wait_until_dead(actor)
        with caplog.at_level(logging.WARNING, logger="kernelevolve.eval.ray_evaluator"):
            assert evaluator.profile(request) is None  # a measurement lost with its actor, no exception
        assert f"time split of {request.candidate.id} not measured" in caplog.text and name in caplog.text
        assert evaluator.submit(request).result(timeout=240).status is Status.OK  # served by a replacement
    finally:
        evaluator.close()


def _search_config(tmp_path: Path) -> dict[str, Any]:
    overrides = [
        "platform=cpu",
        "evaluator=ray",
        "evaluator.num_actors=1",
        "+spec=elementwise_chain",
        "search.termination.max_evaluations=6",
        "search.termination.wall_clock_s=240",
        *FAST_RUN,
        f"run.root={tmp_path}",
        "run.name=ray-kill",
    ]
    return compose_run_config(overrides)


def _reports(graph: Path) -> list[dict[str, Any]]:
    if not graph.is_file():
        return []
    reports = []
    for line in graph.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # the line being written right now
            continue
        if record.get("type") == "report":
            reports.append(record["report"])
    return reports


@pytest.mark.ray
def test_killed_actor_is_replaced_and_the_search_finishes(ray_cluster: None, tmp_path: Path) -> None:
    from kernelevolve.app import run_search

    graph = tmp_path / "ray-kill" / "graph.jsonl"
    killed: list[str] = []

    def kill_after_first_report() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not _reports(graph):
            time.sleep(0.2)
        for name in _our_actors():  # the actor itself, not the evaluation child inside it
            ray.kill(ray.get_actor(name), no_restart=True)
            killed.append(name)

    killer = threading.Thread(target=kill_after_first_report, daemon=True)
    killer.start()
    result = run_search(_search_config(tmp_path))
    killer.join(timeout=5)
    assert len(killed) == 1
    results = result.results
    reports = _reports(graph)
    statuses = [r["status"] for r in reports]
    assert results["evaluations"] == 6, statuses
    assert results["evaluations_by_status"]["worker_crash"] >= 1, statuses
    assert results["best"] is not None
    crash = next(i for i, r in enumerate(reports) if r["status"] == Status.WORKER_CRASH.value)
    assert killed[0] in reports[crash]["feedback"] and "not retried" in reports[crash]["feedback"]
    pid = lambda report: report["worker"].split(":")[1]  # noqa: E731  host:pid:device
    before = {pid(r) for r in reports[:crash] if r["status"] == "ok"}
    after = {pid(r) for r in reports[crash + 1 :] if r["status"] == "ok"}
    assert before and after and not before & after, statuses  # later ones ran under the replacement actor


@pytest.mark.ray
@pytest.mark.skipif(not KERNELBENCH.exists(), reason="KernelBench problems not found")
@pytest.mark.parametrize("isolate", [False, True], ids=["threads", "processes"])
def test_sweep_on_ray_runs_problems_side_by_side(ray_cluster: None, tmp_path: Path, isolate: bool) -> None:
    """In processes of their own (--isolate) the problems join this cluster through RAY_ADDRESS."""
    from kernelevolve.bench.sweep.driver import Sweep
    from kernelevolve.bench.sweep.run import SweepOptions
    from kernelevolve.bench.sweep.summary import load_records

    sets = (
        "platform.eval.timing_trials=3",
        "platform.eval.correctness_trials=2",
        "platform.eval.measure_compile_baseline=false",
        "kb.enabled=false",
        "kb.record_past_wins=false",
        "kernelbench.cpu_budget_elements=4096",
    )
    options = SweepOptions(
        kernelbench_path=KERNELBENCH,
        out=tmp_path / "sweep",
        levels=(1,),
        ids="19,21",
        budget_evals=2,
        budget_seconds=120,
        evaluator="ray",
        parallel=2,
        sets=sets,
        isolate=isolate,
    )
    outcome = Sweep(options).run()
    assert "RAY_ADDRESS" not in os.environ  # named for the problems' processes while they ran
    assert sorted(outcome.ran) == ["L1/19", "L1/21"] and outcome.complete
    records = load_records(options.out)
    assert [(r["evaluator"], r["status"]) for r in records] == [("ray", "ok"), ("ray", "ok")]
    for record in records:  # each problem's run held exactly one actor
        config = json.loads((Path(record["run_dir"]) / "config.json").read_text())
        assert config["evaluator"]["num_actors"] == 1
    spans = [
        (start, start + r["wall_s"])
        for r in records
        for start in [datetime.strptime(r["started_at"], "%Y-%m-%dT%H:%M:%S%z").timestamp()]
    ]
    assert max(s for s, _ in spans) < min(e for _, e in spans)  # the two runs overlapped in time
