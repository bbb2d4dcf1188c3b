"""platform=auto: the platform named by this machine's GPU (a table of device names, on CPU), cpu without one."""

from __future__ import annotations

import pytest

from kernelevolve.platforms import (
    PlatformError,
    available_platforms,
    detect_platform,
    load_platform,
    platform_for_device,
)

# What torch.cuda.get_device_name() says on each kind of card (and some it must not guess).
DEVICE_NAMES = [
    ("NVIDIA H100 80GB HBM3", "h100"),
    ("NVIDIA H100 PCIe", "h100"),
    ("NVIDIA H100 NVL", "h100"),
    ("NVIDIA H200", "h200"),
    ("NVIDIA H200 NVL", "h200"),
    ("NVIDIA A100-SXM4-80GB", "a100"),
    ("NVIDIA A100 80GB PCIe", "a100"),
    ("AMD Instinct MI300X", "mi300x"),
    (None, "cpu"),
]
UNKNOWN = ["NVIDIA GH200 480GB", "NVIDIA GeForce RTX 4090", "AMD Instinct MI300A", "Tesla V100-SXM2-32GB"]


@pytest.mark.parametrize(("device_name", "platform"), DEVICE_NAMES)
def test_auto_maps_device_names_to_platforms(device_name: str | None, platform: str) -> None:
    assert platform_for_device(device_name) == platform


@pytest.mark.parametrize("device_name", UNKNOWN)
def test_auto_refuses_a_gpu_it_does_not_know(device_name: str) -> None:
    with pytest.raises(PlatformError, match=f"{device_name!r} matches no platform.*h200"):
        platform_for_device(device_name)


def test_every_gpu_platform_names_its_devices() -> None:
    for name in available_platforms():
        platform = load_platform(name)
        assert bool(platform.device_names) == (platform.device != "cpu"), name


def test_auto_on_this_machine_and_on_a_faked_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        assert detect_platform() == "cpu" and load_platform("auto").name == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: "NVIDIA H200")
    assert detect_platform() == "h200" and load_platform("auto").peak_bandwidth_gbs == 4800


def test_compose_config_resolves_auto() -> None:
    pytest.importorskip("hydra")
    torch = pytest.importorskip("torch")
    from kernelevolve.api import compose_config

    expected = "cpu" if not torch.cuda.is_available() else detect_platform()
    cfg = compose_config("auto")
    assert cfg["platform"]["name"] == expected and cfg["platform"]["eval"]["timing_trials"]
