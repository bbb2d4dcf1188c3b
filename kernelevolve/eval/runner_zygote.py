"""The zygote: torch and the kernel languages imported once (never CUDA), forking one runner per candidate.

Started by the judge (`runner_client.RunnerPool`) with the judge's environment (pinned device, Triton's
interpreter switch) and a control socket. Each "fork" request carries the new runner's channel as a file
descriptor; the child starts its own session (the judge kills it with its process group), dies with this
process, and serves the judge on that channel. The zygote is the subreaper of everything its runners
start, so a process a candidate forks and detaches (setsid) ends up here, and "reap" kills it.
Control messages are JSON both ways; no candidate code ever runs in this process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    from kernelevolve.eval import containment

    containment.die_with_parent()
    containment.become_subreaper()
    _preload()
    runners: set[int] = set()
    reply: dict[str, object]
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(control, 1 << 16, 4)
        except OSError:
            return
        if not data:
            return
        request = json.loads(data.decode())
        if request["op"] == "fork":
            pid = _fork_runner(control, fds[0], request)
            os.close(fds[0])
            runners.add(pid)
            reply = {"pid": pid}
        elif request["op"] == "status":
            _reap_exited()
            reply = {"status": _EXITED.get(int(request["pid"]))}
        elif request["op"] == "reap":
            keep = set(request.get("keep", []))
            killed = containment.reap_orphans(keep)
            runners &= keep
            reply = {"killed": killed}
        else:
            reply = {"error": f"unknown op {request['op']!r}"}
        _reap_exited()
        control.sendall(json.dumps(reply).encode() + b"\n")


def _preload() -> None:
    """Pay the imports once: every runner forked later has them."""
    import importlib

    for name in (
        "torch",
        "torch.utils._python_dispatch",
        "triton",
        "triton.language",
        "triton.runtime.interpreter",
        "kernelevolve.backends",
        "kernelevolve.backends.triton",
        "kernelevolve.eval.correctness",
        "kernelevolve.eval.feedback",
        "kernelevolve.eval.input_refresh",
        "kernelevolve.eval.precompile",
        "kernelevolve.specs.reference",
        "kernelevolve.eval.runner",
        "kernelevolve.eval.shared_tensors",
        "kernelevolve.eval.timers",
    ):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    with contextlib.suppress(Exception):  # a Triton without it: each runner pays on its first compile
        from triton.runtime.cache import triton_key

        # Triton's compile cache key hashes its own sources and libtriton once per process (about half a second): here,
        # every runner forked after inherits the answer instead of paying it on its first compile
        triton_key()
    from kernelevolve.eval.runner import OpTrace

    with OpTrace():  # its first use imports about 900 modules (sympy among them): once here, not per runner
        import torch

        torch.empty(1).clone()


def _fork_runner(control: socket.socket, channel_fd: int, request: dict[str, object]) -> int:
    pid = os.fork()
    if pid:
        return pid
    try:  # the child: nothing of the zygote's control but the channel it was given
        control.close()
        os.setsid()
        from kernelevolve.eval import containment

        containment.die_with_parent()
        log_path = str(request.get("log", ""))
        if log_path:
            fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.close(fd)
        import faulthandler

        faulthandler.enable(file=sys.stderr, all_threads=True)
        faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
        os.environ["KERNELEVOLVE_RUNNER_FD"] = str(channel_fd)
        from kernelevolve.eval import runner

        sandbox = request.get("sandbox")
        runner.main(str(request.get("device", "cpu")), sandbox if isinstance(sandbox, dict) else None)
    finally:
        os._exit(1)
    return 0  # unreachable


_EXITED: dict[int, int] = {}  # runner pid -> exit code (negative: the signal that killed it)
_EXITED_KEPT = 256


def _reap_exited() -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _EXITED[pid] = os.waitstatus_to_exitcode(status)
        while len(_EXITED) > _EXITED_KEPT:
            _EXITED.pop(next(iter(_EXITED)))


if __name__ == "__main__":
    main()
