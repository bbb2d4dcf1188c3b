"""On-disk cache of eager / torch.compile baselines.

A baseline is only reusable on the same spec (content key), platform, device model, torch and
triton versions, and timing settings; all of them go into the cache key. Files are JSON under
`kernelevolve.paths.cache_dir()/baselines/`, written atomically so concurrent workers never see
half a file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kernelevolve.paths import cache_dir
from kernelevolve.types import Baseline, EvalSettings, KernelSpec

log = logging.getLogger(__name__)
# 2: baselines carry their own output's accuracy; 3: and torch.compile at exact fp32 and with CUDA graphs where
# those apply (a format-2 entry would read as if neither applied); 4: a training step's pays the forward probe
CACHE_FORMAT = 4


@dataclass(frozen=True)
class BaselineKey:
    spec_key: str
    spec_name: str
    platform: str
    device_name: str
    torch_version: str
    triton_version: str
    timing_trials: int
    warmup_trials: int
    flush_l2: bool
    launch_cover_us: float
    measure_compile: bool
    seed: int

    @staticmethod
    def make(
        spec: KernelSpec, platform: str, settings: EvalSettings, environment: dict[str, str]
    ) -> BaselineKey:
        """`environment` is what a worker reports: see `environment_info`."""
        return BaselineKey(
            spec_key=spec.key,
            spec_name=spec.name,
            platform=platform,
            device_name=environment["device_name"],
            torch_version=environment["torch"],
            triton_version=environment["triton"],
            timing_trials=settings.timing_trials,
            warmup_trials=settings.warmup_trials,
            flush_l2=settings.flush_l2,
            launch_cover_us=settings.launch_cover_us,
            measure_compile=settings.measure_compile_baseline,
            seed=settings.seed,
        )

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:20]


def environment_info(device: str) -> dict[str, str]:
    """Device model and library versions of this process (call inside a worker, after pinning)."""
    import torch

    try:
        import triton

        triton_version = str(triton.__version__)
    except ImportError:
        triton_version = "none"
    # (a CPU's eager times depend on its intra-op threads: cached baselines of another count are not reused)
    cpu = f"cpu, {torch.get_num_threads()} intra-op thread(s)"
    device_name = torch.cuda.get_device_name(0) if device.startswith("cuda") else cpu
    return {"device_name": device_name, "torch": str(torch.__version__), "triton": triton_version}


def busy_host() -> str:
    """Why wall-clock timings on this host are not to be kept ("": they are): a 1-minute load average above
    its core count. On 2 busy cores eager softmax at 5x200 timed 7.9 ms a call instead of 0.005 ms, each
    parallel region waiting a scheduler tick for its second thread; cached, such a baseline skewed
    every later run's speedups."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this system
        return ""
    cores = os.cpu_count() or 1
    return f"load average {load:.1f} on {cores} core(s)" if load > cores else ""


class BaselineCache:
    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else cache_dir() / "baselines"

    def path(self, key: BaselineKey) -> Path:
        safe_name = re.sub(r"[^A-Za-z0-9_.-]+", "_", key.spec_name)[:80]
        return self.root / f"{safe_name}-{key.digest()}.json"

    def get(self, key: BaselineKey) -> dict[str, Baseline] | None:
        path = self.path(key)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, json.JSONDecodeError) as exc:
            log.warning("ignoring unreadable baseline cache file %s: %s", path, exc)
            return None
        if data.get("format") != CACHE_FORMAT or data.get("key") != asdict(key):
            return None
        try:
            return {name: Baseline.from_json(value) for name, value in data["baselines"].items()}
        except (KeyError, TypeError) as exc:
            log.warning("ignoring malformed baseline cache file %s: %s", path, exc)
            return None

    def put(self, key: BaselineKey, baselines: dict[str, Baseline]) -> Path:
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload: dict[str, Any] = {
            "format": CACHE_FORMAT,
            "key": asdict(key),
            "baselines": {name: b.to_json() for name, b in baselines.items()},
        }
        handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(handle, "w") as out:
                json.dump(payload, out, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path
