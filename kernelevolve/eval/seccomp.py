"""A seccomp filter that stops a process from starting processes (threads stay allowed).

A runner judged from outside is frozen (SIGSTOP) while the judge checks the outputs it left; a process it
started is not frozen with it, and can write those outputs while they are checked, or do the timed calls'
work beside them, outside their timed windows. With this filter on, fork, vfork and clone without
CLONE_THREAD fail with EPERM (clone3 with ENOSYS, so the C library falls back to clone for its threads),
whatever the candidate reaches them through (os.fork, subprocess, multiprocessing, a DataLoader).

The CPU platform installs it at a runner's start (`runner._sandbox`); on GPUs Triton starts the compilers
(ptxas, the launcher's C compiler) as processes, so there the judge looks for processes a runner started
instead (`judged_run._no_helpers`). Needs no_new_privs (set first by the runner) and Linux on x86-64 or
arm64; elsewhere `block_new_processes` returns False and nothing is filtered.
"""

from __future__ import annotations

import ctypes
import platform
import struct

_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_EPERM, _ENOSYS = 1, 38
_CLONE_THREAD = 0x00010000
_LD_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06  # BPF_LD|W|ABS, JMP|JEQ|K, JGE, JSET, RET|K
# x86-64's x32 ABI: the same arch with this bit set in the syscall number (its fork is 57 | the bit)
_X32_SYSCALL_BIT = 0x40000000
# machine -> (AUDIT_ARCH_*, clone, clone3, the fork-like syscalls to refuse outright)
_ARCHES = {
    "x86_64": (0xC000003E, 56, 435, (57, 58)),  # fork, vfork
    "aarch64": (0xC00000B7, 220, 435, ()),
    "arm64": (0xC00000B7, 220, 435, ()),
}


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def _program(arch: int, clone: int, clone3: int, forks: tuple[int, ...]) -> list[bytes]:
    """Another syscall: allowed; clone3: ENOSYS; fork-like: EPERM; clone: allowed with CLONE_THREAD. Another
    arch (x86-64's i386 ABI through `int 0x80`, arm64's AArch32) and x86-64's x32 numbers: EPERM, whatever
    the call: their fork and clone have numbers of their own, which the checks below would let through
    (a candidate running machine code forked from a filtered runner that way; no honest process uses them)."""
    allow, deny = _insn(_RET, _RET_ALLOW), _insn(_RET, _RET_ERRNO | _EPERM)
    tail = [
        _insn(_JEQ, clone, 0, 3),  # not clone: on to allow
        _insn(_LD_ABS, 16),  # clone's flags (args[0], low half)
        _insn(_JSET, _CLONE_THREAD, 1, 0),
        deny,
        allow,
    ]
    refuse = [_insn(_JEQ, nr, len(forks) - i + len(tail) - 1, 0) for i, nr in enumerate(forks)]
    return [
        _insn(_LD_ABS, 4),  # seccomp_data.arch
        _insn(_JEQ, arch, 1, 0),
        deny,
        _insn(_LD_ABS, 0),  # seccomp_data.nr
        _insn(_JGE, _X32_SYSCALL_BIT, 0, 1),
        deny,
        _insn(_JEQ, clone3, 0, 1),
        _insn(_RET, _RET_ERRNO | _ENOSYS),
        *refuse,
        *tail,
        *([deny] if forks else []),  # the fork-like syscalls jump here
    ]


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def block_new_processes() -> bool:
    """Install the filter on the calling thread (and the threads it starts later); whether it took."""
    spec = _ARCHES.get(platform.machine().lower())
    if spec is None:
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return False
    code = b"".join(_program(*spec))
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = _Fprog(len(code) // 8, ctypes.addressof(buffer))
    prctl = libc.prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return int(prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0)) == 0
