"""The CPU runners' seccomp filter (`eval/seccomp.py`): no new processes by any ABI, threads still start."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or platform.machine().lower() not in ("x86_64", "amd64"),
    reason="the filter's x86-64 program",
)

# In a child: the filter stays on the process that installs it
_SCRIPT = r"""
import ctypes, mmap, os, threading
from kernelevolve.eval import containment, seccomp
containment.no_new_privileges()
assert seccomp.block_new_processes()
try:
    os.fork()
    print("fork: allowed")
except PermissionError:
    print("fork: refused")
t = threading.Thread(target=lambda: None); t.start(); t.join()
print("thread: started")
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
print("x32 getpid:", libc.syscall(ctypes.c_long(0x40000000 | 39)))
# i386 getpid through int 0x80 (mov eax, 20; int 0x80; ret): another arch to the filter
code = bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3])
page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(code)
call = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))
print("i386 getpid:", call(), "pid:", os.getpid())
"""


def test_no_process_by_any_abi_and_threads_still_start() -> None:
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "fork: refused" in lines and "thread: started" in lines
    assert "x32 getpid: -1" in lines
    i386 = next(line for line in lines if line.startswith("i386 getpid:"))
    assert i386.split()[2] == "-1", i386  # EPERM: -1 in eax, where the pid came back before
