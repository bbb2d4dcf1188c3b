"""Landlock: a runner may write only beneath the folders it is given (`restrict_writes`), for itself and
everything it forks; reads stay allowed. Stdlib and ctypes only, like `containment`, so a runner applies it
before importing anything heavy; where Landlock is missing the functions say so (0, False) and the caller
records the weaker sandbox.
"""

from __future__ import annotations

import ctypes
import errno
import os

from kernelevolve.eval.containment import _LIBC, no_new_privileges

__all__ = ["landlock_abi", "restrict_writes"]

_SYS_LANDLOCK_CREATE_RULESET = 444  # the same number on every architecture since Linux 5.13
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1 << 0
_LANDLOCK_RULE_PATH_BENEATH = 1

# Filesystem access rights (linux/landlock.h) and the ABI that introduced each.
_ACCESS_FS_WRITE_FILE = 1 << 1
_ACCESS_FS_REMOVE_DIR = 1 << 4
_ACCESS_FS_REMOVE_FILE = 1 << 5
_ACCESS_FS_MAKE_CHAR = 1 << 6
_ACCESS_FS_MAKE_DIR = 1 << 7
_ACCESS_FS_MAKE_REG = 1 << 8
_ACCESS_FS_MAKE_SOCK = 1 << 9
_ACCESS_FS_MAKE_FIFO = 1 << 10
_ACCESS_FS_MAKE_BLOCK = 1 << 11
_ACCESS_FS_MAKE_SYM = 1 << 12
_ACCESS_FS_REFER = 1 << 13  # ABI 2: link/rename across directories
_ACCESS_FS_TRUNCATE = 1 << 14  # ABI 3

# Every right that changes the filesystem. Reads and execution are not handled, so stay allowed
# everywhere. IOCTL_DEV (ABI 5) is deliberately not handled: CUDA drives /dev/nvidia* by ioctl.
_WRITE_ACCESS_ABI1 = (
    _ACCESS_FS_WRITE_FILE
    | _ACCESS_FS_REMOVE_DIR
    | _ACCESS_FS_REMOVE_FILE
    | _ACCESS_FS_MAKE_CHAR
    | _ACCESS_FS_MAKE_DIR
    | _ACCESS_FS_MAKE_REG
    | _ACCESS_FS_MAKE_SOCK
    | _ACCESS_FS_MAKE_FIFO
    | _ACCESS_FS_MAKE_BLOCK
    | _ACCESS_FS_MAKE_SYM
)
# Rights a rule on a regular file (not a directory) may carry.
_FILE_ACCESS = _ACCESS_FS_WRITE_FILE | _ACCESS_FS_TRUNCATE


class _RulesetAttr(ctypes.Structure):
    # struct landlock_ruleset_attr; the kernel reads only the prefix whose size it is given.
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),  # ABI 4
        ("scoped", ctypes.c_uint64),  # ABI 6
    ]


class _PathBeneathAttr(ctypes.Structure):
    # struct landlock_path_beneath_attr is __attribute__((packed)): 12 bytes, no padding.
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _syscall(number: int, *args: ctypes.c_void_p | ctypes.c_size_t | ctypes.c_uint32 | ctypes.c_int) -> int:
    """The raw syscall; raises OSError from errno on failure."""
    if _LIBC is None:
        raise OSError(errno.ENOSYS, "no libc syscall()")
    result = int(_LIBC.syscall(ctypes.c_long(number), *args))
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where Landlock is missing or disabled."""
    try:
        return _syscall(
            _SYS_LANDLOCK_CREATE_RULESET,
            ctypes.c_void_p(None),
            ctypes.c_size_t(0),
            ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION),
        )
    except OSError:  # ENOSYS (old kernel), EOPNOTSUPP (LSM disabled at boot)
        return 0


def _handled_write_access(abi: int) -> int:
    access = _WRITE_ACCESS_ABI1
    if abi >= 2:
        access |= _ACCESS_FS_REFER  # under ABI 1 cross-directory renames and links are always denied
    if abi >= 3:
        access |= _ACCESS_FS_TRUNCATE  # under ABI 1-2 truncate(2) by path stays possible everywhere
    return access


def _ruleset_size(abi: int) -> int:
    # Hand the kernel only the fields its ABI knows (a longer struct passes only if its tail is zero).
    if abi >= 6:
        return ctypes.sizeof(_RulesetAttr)
    return 16 if abi >= 4 else 8


def _thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def _allow_writes_beneath(ruleset_fd: int, path: str, handled: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)  # O_PATH: no read permission needed on the directory
    try:
        allowed = handled if os.path.isdir(path) else handled & _FILE_ACCESS
        rule = _PathBeneathAttr(allowed_access=allowed, parent_fd=fd)
        _syscall(
            _SYS_LANDLOCK_ADD_RULE,
            ctypes.c_int(ruleset_fd),
            ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH),
            ctypes.c_void_p(ctypes.addressof(rule)),
            ctypes.c_uint32(0),
        )
    finally:
        os.close(fd)


def restrict_writes(writable_dirs: list[str]) -> bool:
    """Forbid creating, writing, truncating, renaming or removing files anywhere but beneath
    `writable_dirs`, for this process and everything it later forks; reads stay allowed everywhere.
    Landlock applies to root too and cannot be undone. Returns False, changing nothing, where Landlock
    is unavailable (non-Linux, kernel < 5.13, LSM disabled); the caller records the weaker sandbox.

    An entry may also be a single file (e.g. /dev/null). A CUDA runner needs at least /dev (the driver
    opens /dev/nvidia* read-write), /dev/shm and its compiler caches (Triton, Inductor) and temp dir.
    Files already open for writing stay writable, so call it before the candidate runs. It restricts
    only the calling thread (and threads it starts later), so it refuses to run (RuntimeError) in a
    process that already has other threads: call it in a freshly forked runner, before importing
    torch. Raises OSError for a path that does not exist."""
    abi = landlock_abi()
    if abi <= 0:
        return False
    if _thread_count() > 1:
        raise RuntimeError("restrict_writes must run while the process has a single thread")
    for path in writable_dirs:
        os.stat(path)  # a missing path is a configuration error: raise before changing anything
    if not no_new_privileges():  # restrict_self demands it of an unprivileged caller
        return False
    handled = _handled_write_access(abi)
    attr = _RulesetAttr(handled_access_fs=handled, handled_access_net=0, scoped=0)
    ruleset_fd = _syscall(
        _SYS_LANDLOCK_CREATE_RULESET,
        ctypes.c_void_p(ctypes.addressof(attr)),
        ctypes.c_size_t(_ruleset_size(abi)),
        ctypes.c_uint32(0),
    )
    try:
        for path in writable_dirs:
            _allow_writes_beneath(ruleset_fd, path, handled)
        _syscall(_SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset_fd), ctypes.c_uint32(0))
    finally:
        os.close(ruleset_fd)
    return True
