"""The Ray side of the RayEvaluator: joining the cluster, how many actors it holds, and the actor itself
(one LocalEvaluator on the one device Ray assigned it).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import ray

from kernelevolve.types import EvalRequest, EvalSettings, KernelSpec

if TYPE_CHECKING:
    from kernelevolve.platforms import Platform


# Vendor masks Ray may set besides CUDA_VISIBLE_DEVICES; the evaluation child pins through
# CUDA_VISIBLE_DEVICES with the physical index, which a second mask would re-index.
_EXTRA_DEVICE_MASKS = ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")


_connect_lock = threading.Lock()


def connect(address: str | None = None) -> None:
    """Join the cluster at `address` ("auto": the running one), or start a local one; once per process."""
    with _connect_lock:  # sweeps build evaluators from several threads at once
        if not ray.is_initialized():
            ray.init(address=address, logging_level=logging.WARNING)


def child_devices(platform: Platform, gpu_ids: list[str], cpu_only: bool = False) -> list[str] | None:
    """The LocalEvaluator devices for an actor Ray gave `gpu_ids` (None: the CPU)."""
    if platform.device == "cpu" or cpu_only:
        return None
    if not gpu_ids:
        raise RuntimeError(
            f"platform {platform.name!r} needs a GPU but Ray assigned this actor none; "
            "give actors num_gpus (the default on GPU platforms)"
        )
    # Ray's ids are physical indices (it set CUDA_VISIBLE_DEVICES to them); the child re-pins to one.
    return [f"{platform.device}:{gpu_ids[0]}"]


class EvalActor:
    """The actor body (wrapped by `ray.remote` at creation): one LocalEvaluator on one device."""

    def __init__(
        self, name: str, platform_name: str, settings: dict[str, Any], workers_per_device: int, cpu_only: bool
    ) -> None:
        from kernelevolve.eval.local import LocalEvaluator
        from kernelevolve.platforms import load_platform

        platform = load_platform(platform_name)
        self.name = name
        self.gpu_ids = [str(g) for g in ray.get_gpu_ids()]
        self.visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        devices = child_devices(platform, self.gpu_ids, cpu_only)
        if devices is None and platform.device != "cpu":
            platform = replace(platform, device="cpu")  # compile-only work: no GPU to pin
        if platform.vendor == "amd":
            for name in _EXTRA_DEVICE_MASKS:
                os.environ.pop(name, None)
        self.evaluator = LocalEvaluator(
            platform, EvalSettings.from_json(settings), devices=devices, workers_per_device=workers_per_device
        )

    def info(self) -> dict[str, Any]:
        context = ray.get_runtime_context()
        return {
            "node_id": context.get_node_id(),
            "actor_id": context.get_actor_id(),
            "pid": os.getpid(),
            "gpu_ids": list(self.gpu_ids),
            "cuda_visible_devices": self.visible,
            "devices": list(self.evaluator.devices),
            "capacity": self.evaluator.capacity,
        }

    def evaluate(self, request: dict[str, Any]) -> dict[str, Any]:
        report = self.evaluator.submit(EvalRequest.from_json(request)).result()
        return replace(report, worker=f"{report.worker}@{self.name}").to_json()  # host:pid:device@actor

    def baselines(self, spec: dict[str, Any], platform: str) -> dict[str, Any]:
        result = self.evaluator.baselines(KernelSpec.from_json(spec), platform)
        return {name: baseline.to_json() for name, baseline in result.items()}

    def profile(self, request: dict[str, Any]) -> dict[str, Any] | None:
        return self.evaluator.profile(EvalRequest.from_json(request))

    def close(self) -> None:
        self.evaluator.close()


@functools.cache
def _actor_class() -> Any:
    return ray.remote(EvalActor)


def cluster_accelerators(num_gpus: float, accelerator_type: str | None, resources: dict[str, float]) -> int:
    """How many actors of this shape the cluster could hold at once (by total resources)."""
    nodes = [node for node in ray.nodes() if node.get("Alive")]
    total = 0
    for node in nodes:
        have = node.get("Resources", {})
        if accelerator_type and f"accelerator_type:{accelerator_type}" not in have:
            continue
        fits = [int(have.get("GPU", 0) // num_gpus)] if num_gpus > 0 else []
        fits += [int(have.get(name, 0) // amount) for name, amount in resources.items() if amount > 0]
        if fits:
            total += min(fits)
    return total
