"""Linux process containment for evaluating untrusted candidate code.

A "keeper" process forks a "runner" that imports the candidate. A candidate may fork and call setsid
to outlive its evaluation, allocate without bound, write anywhere the user can, or read the judge's
reference outputs out of its memory. These primitives close those doors where the kernel allows:

- the keeper becomes a child subreaper (`become_subreaper`), so escaped descendants are reparented
  to it rather than to init, and `reap_orphans` finds, kills and reaps them after each evaluation;
- `kill_tree` stops and then kills a whole process tree and its process group;
- the runner calls `limit_memory`, `no_new_privileges` and `landlock.restrict_writes` before it
  imports the candidate; `rss_bytes` feeds a parent-side memory watchdog;
- the judge, which holds reference outputs, calls `not_dumpable`.

Stdlib and ctypes only, so a runner can apply it before importing anything heavy. Where a feature is
missing (non-Linux, old kernel, disabled LSM) the functions say so (False, empty lists) rather than
raise; the caller records that the sandbox is weaker.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import resource
import signal
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "become_subreaper",
    "children_of",
    "die_with_parent",
    "descendants_of",
    "kill_tree",
    "limit_memory",
    "no_new_privileges",
    "not_dumpable",
    "reap_orphans",
    "rss_bytes",
    "tree_rss_bytes",
]

# prctl options (linux/prctl.h)
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_GET_DUMPABLE = 3
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38

# ---------------------------------------------------------------------------------------------------
# libc access


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    libc.syscall.restype = ctypes.c_long
    libc.prctl.restype = ctypes.c_int
    return libc


_LIBC = _libc()


def _prctl(option: int, arg2: int = 0) -> int:
    """prctl(option, arg2, 0, 0, 0); -1 on failure or where there is no prctl."""
    if _LIBC is None:
        return -1
    zero = ctypes.c_ulong(0)
    return int(_LIBC.prctl(ctypes.c_int(option), ctypes.c_ulong(arg2), zero, zero, zero))


# ---------------------------------------------------------------------------------------------------
# prctl switches


def become_subreaper() -> bool:
    """Make the calling process a child subreaper: orphaned descendants (a candidate that forks and
    calls setsid to escape) are reparented to it instead of init, where `reap_orphans` finds them."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1) == 0


def die_with_parent(parent: int | None = None) -> bool:
    """Have the kernel SIGKILL the caller when its parent exits, so a keeper's death takes its runners
    along. Not inherited by the caller's own children (the subreaper reaps those). Pass the parent's
    pid read before forking to close the race where it died before this call: the caller then kills
    itself at once, as the death signal would have."""
    if _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
        return False
    if parent is not None and os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)
    return True


def no_new_privileges() -> bool:
    """Set no_new_privs: execve can no longer grant privileges (setuid bits, file capabilities).
    Landlock needs it; it is per thread and inherited, so call it before starting threads."""
    return _prctl(_PR_SET_NO_NEW_PRIVS, 1) == 0


def not_dumpable() -> bool:
    """Mark the process non-dumpable: an unprivileged same-user process (a candidate's runner) can then
    neither ptrace it nor open /proc/<pid>/mem, maps or environ, and it leaves no core dump. The judge,
    which holds reference outputs, calls this. Root (CAP_SYS_PTRACE) is not stopped by it, and execve
    resets the flag, so call it after exec, in the process to protect."""
    return _prctl(_PR_SET_DUMPABLE, 0) == 0 and _prctl(_PR_GET_DUMPABLE) == 0


def limit_memory(host_bytes: int | None) -> bool:
    """Cap the process's data segment (heap, private writable mappings) at `host_bytes`; an allocation
    beyond it fails (MemoryError in Python) instead of driving the machine into the OOM killer.

    RLIMIT_DATA, not RLIMIT_AS: the CUDA driver reserves address space of the order of the GPU's and
    host's memory together at initialisation (PROT_NONE reservations for unified addressing), so any
    useful RLIMIT_AS breaks CUDA. Since Linux 4.7 RLIMIT_DATA counts only private writable mappings,
    which such reservations are not. Thread stacks and glibc arenas do count: leave room for them.
    Soft and hard limit are set alike, so the candidate cannot raise it again. Returns whether a limit
    was set (False for None)."""
    if host_bytes is None:
        return False
    _soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    limit = host_bytes if hard == resource.RLIM_INFINITY else min(host_bytes, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    return True


# ---------------------------------------------------------------------------------------------------
# /proc reading; every read tolerates the process exiting between listing and reading


@dataclass(frozen=True)
class _Stat:
    pid: int
    state: str
    ppid: int
    pgrp: int
    start: int  # clock ticks after boot: tells a process from a later one that reuses its pid


def _stat(pid: int) -> _Stat | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read().decode("ascii", "replace")
    except OSError:
        return None
    # comm (field 2) may hold spaces and parentheses: the fields that follow start after the last ')'.
    fields = raw[raw.rfind(")") + 2 :].split()
    if len(fields) < 20:
        return None
    return _Stat(pid, fields[0], int(fields[1]), int(fields[2]), int(fields[19]))


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def _snapshot() -> dict[int, _Stat]:
    """Every process in the pid namespace, by pid."""
    return {stat.pid: stat for stat in map(_stat, _pids()) if stat is not None}


def _children_files_work() -> bool:
    # /proc/<pid>/task/<tid>/children exists only with CONFIG_PROC_CHILDREN.
    return os.path.exists(f"/proc/self/task/{os.getpid()}/children")


_CHILDREN_FILES = sys.platform.startswith("linux") and _children_files_work()


def _children_from_files(pid: int) -> list[int]:
    children: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    # A child belongs to the thread that forked it (or the one it was reparented to): read every thread.
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as handle:
                children.extend(int(word) for word in handle.read().split())
        except OSError:
            continue
    return sorted(set(children))


def _children_by_parent(snapshot: dict[int, _Stat]) -> dict[int, list[int]]:
    by_parent: dict[int, list[int]] = {}
    for stat in snapshot.values():
        by_parent.setdefault(stat.ppid, []).append(stat.pid)
    return by_parent


def children_of(pid: int) -> list[int]:
    """The direct children of `pid` (zombies included), sorted; empty if it is gone."""
    if _CHILDREN_FILES:
        return _children_from_files(pid)
    return sorted(_children_by_parent(_snapshot()).get(pid, []))


def _descend(roots: Iterable[int], children: dict[int, list[int]] | None) -> list[int]:
    """Breadth-first descendants of `roots` (roots excluded), from a ppid map or the children files."""
    found: list[int] = []
    seen = set(roots)
    queue = list(seen)
    while queue:
        parent = queue.pop()
        kids = children.get(parent, []) if children is not None else _children_from_files(parent)
        for kid in kids:
            if kid not in seen:
                seen.add(kid)
                found.append(kid)
                queue.append(kid)
    return found


def descendants_of(pid: int) -> list[int]:
    """Every descendant of `pid` (children, grandchildren, ...), sorted. A snapshot: processes fork
    and exit meanwhile, so `kill_tree` stops the tree before trusting it."""
    children = None if _CHILDREN_FILES else _children_by_parent(_snapshot())
    return sorted(_descend([pid], children))


# ---------------------------------------------------------------------------------------------------
# killing


def _signal(stat: _Stat, sig: int) -> bool:
    """Send `sig` to the process `stat` describes, unless its pid now names another process.

    A pidfd pins the process: if, after opening it, /proc still shows the recorded start time, the
    pidfd is the process that was scanned and the signal cannot hit a newcomer that reused the pid
    (pid_max may be as low as 32768, and a fork bomb cycles through it quickly)."""
    try:
        fd = os.pidfd_open(stat.pid)
    except (AttributeError, OSError) as error:  # no pidfd (kernel < 5.3): check, then kill by pid
        if isinstance(error, OSError) and error.errno == errno.ESRCH:
            return False
        current = _stat(stat.pid)
        if current is None or current.start != stat.start:
            return False
        try:
            os.kill(stat.pid, sig)
        except OSError:
            return False
        return True
    try:
        current = _stat(stat.pid)
        if current is None or current.start != stat.start:
            return False
        signal.pidfd_send_signal(fd, sig)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _tree(pid: int, known: Iterable[int], snapshot: dict[int, _Stat]) -> set[int]:
    """`pid`, the members of process group `pid`, and the descendants of all of them and of `known`
    (processes already stopped, whose children a dead parent no longer links to `pid`)."""
    group = {stat.pid for stat in snapshot.values() if stat.pgrp == pid}
    roots = {pid, *group, *known}
    return (roots | set(_descend(roots, _children_by_parent(snapshot)))) & snapshot.keys()


def _stop_tree(pid: int, spared: set[int]) -> dict[int, _Stat]:
    """SIGSTOP the tree until a scan finds no process not seen before: a stopped process can no
    longer fork, so the tree stops growing and every member is known before any is killed."""
    seen: dict[int, _Stat] = {}
    for _ in range(1000):  # bound the loop should a member refuse to stop and keep forking
        snapshot = _snapshot()
        new = _tree(pid, seen, snapshot) - spared - seen.keys()
        if not new:
            break
        for member in new:
            seen[member] = snapshot[member]
            _signal(snapshot[member], signal.SIGSTOP)
    return seen


def _group_is_killable(pid: int, spared: set[int]) -> bool:
    if os.getpgrp() == pid:
        return False
    for other in spared:
        with contextlib.suppress(OSError):
            if os.getpgid(other) == pid:
                return False
    return True


def kill_tree(pid: int, *, except_pids: Iterable[int] = ()) -> list[int]:
    """SIGKILL `pid`, every member of its process group (if it leads one) and every descendant, but
    never the caller or `except_pids`; returns the pids killed (zombies, already dead, are left out).

    The tree is stopped first and found entire, then killed: killing a parent first would reparent
    its children (to the subreaper, or to init) and hide them from the next scan. Zombies are not
    reaped here: the caller waits for its own children; `reap_orphans` reaps reparented ones."""
    spared = {os.getpid(), *except_pids}
    members = _stop_tree(pid, spared)
    killed = sorted(m for m, stat in members.items() if stat.state != "Z" and _signal(stat, signal.SIGKILL))
    # Belt and braces for a group member that joined between the last scan and now.
    if _group_is_killable(pid, spared):
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
    return killed


def _reap(pid: int, deadline: float) -> bool:
    """waitpid `pid` until `deadline`; True once it is reaped (or someone else reaped it)."""
    while True:
        try:
            done, _status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return True
        if done:
            return True
        if time.monotonic() >= deadline:
            return False  # e.g. stuck in uninterruptible sleep in a driver: a later call reaps it
        time.sleep(0.005)


def reap_orphans(keep: set[int], *, timeout: float = 5.0) -> list[int]:
    """In a subreaper: kill (with their trees) and reap every child of the calling process not in
    `keep`. Those are descendants of finished runners that escaped them (double fork, setsid); the
    caller records each as a violation ("a process outlived its evaluation").

    `keep` must hold every child the caller still owns (the live runners): the rest are waited for
    here, so call it while no other thread is starting children. Returns the pids found, sorted; one
    that did not die within `timeout` is reported again by a later call, which reaps it."""
    me = os.getpid()
    deadline = time.monotonic() + timeout
    found: set[int] = set()
    while True:
        strays = [pid for pid in children_of(me) if pid not in keep]
        if not strays:
            break
        for pid in strays:
            kill_tree(pid, except_pids=keep)
        # Killing a stray reparents its own children to us: the next round finds, kills and reaps them.
        reaped = [pid for pid in strays if _reap(pid, deadline)]
        found.update(strays)
        if len(reaped) < len(strays) and time.monotonic() >= deadline:
            break
    return sorted(found)


# ---------------------------------------------------------------------------------------------------
# memory watch


def rss_bytes(pids: Iterable[int]) -> int:
    """Summed resident set size (VmRSS) of `pids`; gone processes and zombies count 0. Shared pages
    count once per process, so this overestimates a tree that shares memory: fine for a watchdog."""
    total = 0
    for pid in set(pids):
        try:
            with open(f"/proc/{pid}/status", "rb") as handle:
                for line in handle:
                    if line.startswith(b"VmRSS:"):
                        total += int(line.split()[1]) * 1024  # reported in kB
                        break
        except (OSError, ValueError, IndexError):
            continue
    return total


def tree_rss_bytes(pid: int) -> int:
    """`rss_bytes` of `pid` and all its descendants."""
    return rss_bytes([pid, *descendants_of(pid)])
