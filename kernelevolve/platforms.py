"""Per-platform hardware facts, read from platforms/<name>.yaml (docs/platforms.md: adding one).

Folders named in KERNELEVOLVE_PLATFORMS (separated like PATH) are read first, so a platform can be added,
or a shipped one's facts replaced, without touching the installed package.

`platform=auto` resolves to the platform whose `device_names` patterns (regular expressions, in its YAML
file) match `torch.cuda.get_device_name()`, or to `cpu` where no GPU is visible; a GPU no platform
names, or more than one does, is an error that says which name to pass instead.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from kernelevolve.paths import PLATFORMS_DIR

AUTO = "auto"
NO_GPU_PLATFORM = "cpu"
Support = Literal["full", "compile_only", "none"]
_SUPPORT_VALUES = ("full", "compile_only", "none")


@dataclass(frozen=True)
class Platform:
    name: str
    vendor: str  # nvidia, amd, cpu
    device: str  # torch device type the harness uses: "cuda" (also ROCm) or "cpu"
    description: str
    peak_bandwidth_gbs: float  # device memory bandwidth, GB/s
    peak_tflops: dict[str, float]  # dtype or unit ("fp32", "tf32", "bf16", ...) -> dense TFLOP/s
    l2_bytes: int
    compute_units: int  # SMs on NVIDIA, CUs on AMD, cores on CPU
    arch: str = ""  # sm90, sm80, gfx942, x86_64
    backends: dict[str, Support] = field(default_factory=dict)
    warp_size: int = 32
    shared_memory_per_block_bytes: int = 0
    notes: str = ""
    device_names: tuple[str, ...] = ()  # regexes matched against torch.cuda.get_device_name() (platform=auto)

    def support(self, backend: str) -> Support:
        return self.backends.get(backend, "none")

    def runnable_backends(self, wanted: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(b for b in wanted if self.support(b) == "full")

    def roofline_floor_ms(self, bytes_moved: float, flops: float, dtype: str = "fp32") -> float:
        """Fastest any kernel could be for this much traffic and arithmetic (datasheet peaks)."""
        memory_s = bytes_moved / (self.peak_bandwidth_gbs * 1e9)
        peak = max(self.peak_tflops.get(dtype, 0.0), max(self.peak_tflops.values(), default=0.0))
        compute_s = flops / (peak * 1e12) if peak > 0 else 0.0
        return 1e3 * max(memory_s, compute_s)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "vendor": self.vendor,
            "device": self.device,
            "peak_bandwidth_gbs": self.peak_bandwidth_gbs,
            "peak_tflops": dict(self.peak_tflops),
            "l2_bytes": self.l2_bytes,
            "compute_units": self.compute_units,
            "arch": self.arch,
            "backends": dict(self.backends),
        }


class PlatformError(ValueError):
    pass


def platform_dirs() -> list[Path]:
    """Where platform files are looked for, first match wins: KERNELEVOLVE_PLATFORMS, then the shipped."""
    extra = [
        Path(p).expanduser() for p in os.environ.get("KERNELEVOLVE_PLATFORMS", "").split(os.pathsep) if p
    ]
    return [*extra, PLATFORMS_DIR]


def available_platforms(directory: Path | None = None) -> list[str]:
    folders = [directory] if directory is not None else platform_dirs()
    return sorted({p.stem for folder in folders for p in folder.glob("*.yaml")})


def platform_for_device(device_name: str | None, directory: Path | None = None) -> str:
    """The platform `auto` means for a GPU of this name (None: no GPU, so `cpu`)."""
    if device_name is None:
        return NO_GPU_PLATFORM
    matches = [
        name
        for name in available_platforms(directory)
        if any(re.search(p, device_name) for p in load_platform(name, directory).device_names)
    ]
    if len(matches) == 1:
        return matches[0]
    found = f"matches platforms {matches}" if matches else "matches no platform's device_names"
    raise PlatformError(
        f"platform=auto: GPU {device_name!r} {found}; pass one of {', '.join(available_platforms(directory))} "
        "(platform=NAME), or describe it in a new platforms/<name>.yaml (docs/platforms.md)"
    )


def detect_platform(directory: Path | None = None) -> str:
    """This machine's platform: from the first visible GPU's name, `cpu` where there is none."""
    import torch

    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        return platform_for_device(None, directory)
    return platform_for_device(torch.cuda.get_device_name(0), directory)


def resolve_platform_name(name: str, directory: Path | None = None) -> str:
    """`name` itself, or for `auto` the detected platform's name."""
    return detect_platform(directory) if name == AUTO else name


def load_platform(name: str, directory: Path | None = None) -> Platform:
    name = resolve_platform_name(name, directory)
    folders = [directory] if directory is not None else platform_dirs()
    path = next(
        (f / f"{name}.yaml" for f in folders if (f / f"{name}.yaml").is_file()), folders[-1] / f"{name}.yaml"
    )
    if not path.is_file():
        valid = ", ".join([*available_platforms(directory), AUTO])
        raise PlatformError(f"unknown platform {name!r}; valid: {valid} (adding one: docs/platforms.md)")
    data = yaml.safe_load(path.read_text())
    backends = {str(k): str(v) for k, v in (data.get("backends") or {}).items()}
    for backend, support in backends.items():
        if support not in _SUPPORT_VALUES:
            raise PlatformError(f"{path}: backend {backend!r} support {support!r} not in {_SUPPORT_VALUES}")
    return Platform(
        name=data.get("name", name),
        vendor=data["vendor"],
        device=data["device"],
        description=data.get("description", ""),
        peak_bandwidth_gbs=float(data["peak_bandwidth_gbs"]),
        peak_tflops={str(k): float(v) for k, v in data["peak_tflops"].items()},
        l2_bytes=int(data["l2_bytes"]),
        compute_units=int(data["compute_units"]),
        arch=str(data.get("arch", "")),
        backends=backends,  # type: ignore[arg-type]
        warp_size=int(data.get("warp_size", 32)),
        shared_memory_per_block_bytes=int(data.get("shared_memory_per_block_bytes", 0)),
        notes=data.get("notes", ""),
        device_names=tuple(str(p) for p in data.get("device_names") or ()),
    )
