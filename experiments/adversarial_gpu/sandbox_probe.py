"""Which runner confinement lets CUDA start: each in a fresh forked child, then torch.empty on the GPU.

Run on the GPU machine: python3 experiments/adversarial_gpu/sandbox_probe.py
"""

from __future__ import annotations

import os
import tempfile

import torch  # imported before forking, never initialised here

from kernelevolve.eval import containment


def probe(name: str, confine: object) -> None:
    pid = os.fork()
    if pid == 0:
        try:
            confine()  # type: ignore[operator]
            torch.empty(1, device="cuda")
            print(f"{name}: cuda ok", flush=True)
            os._exit(0)
        except BaseException as exc:  # noqa: BLE001 - the probe reports any failure
            print(f"{name}: {type(exc).__name__}: {str(exc)[:160]}", flush=True)
            os._exit(1)
    os.waitpid(pid, 0)


writable = [tempfile.gettempdir(), "/dev", os.path.expanduser("~/.triton"), os.path.expanduser("~/.nv")]
for path in writable:
    os.makedirs(path, exist_ok=True)
probe("nothing", lambda: None)
probe("no_new_privileges", containment.no_new_privileges)
probe("rlimit_data 32 GiB", lambda: containment.limit_memory(32 << 30))
probe("landlock", lambda: containment.restrict_writes(writable))
probe("landlock + /proc + /sys", lambda: containment.restrict_writes([*writable, "/proc", "/sys"]))
