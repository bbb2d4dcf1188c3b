"""Process containment primitives (Linux, CPU): subreaper and orphan reaping, tree killing, the memory
limit, the Landlock write sandbox, non-dumpability and the RSS watch.

Anything that changes process-wide state (subreaper, rlimits, Landlock, uid) runs in a child Python
so that the pytest process is left as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelevolve.eval import containment, landlock

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux process containment")

REPO = Path(__file__).resolve().parents[1]


def _run_python(script: str, *args: str, timeout: float = 60) -> dict:
    """Run `script` in a fresh Python; it prints one JSON object as its last line of output."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def _dead(pid: int) -> bool:
    """Gone, or a zombie (a killed process whose new parent has not reaped it yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2] in "ZX"


def _wait_dead(pids: list[int], timeout: float = 5.0) -> list[int]:
    """The pids still alive after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        alive = [pid for pid in pids if not _dead(pid)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.02)


# ---------------------------------------------------------------------------------------------------
# subreaper and orphans

_ESCAPE = """
import json, os, time
from kernelevolve.eval import containment as c

subreaper = c.become_subreaper()
me = os.getpid()
kept = os.fork()  # a live runner the keeper still owns
if kept == 0:
    time.sleep(60)
    os._exit(0)
r, w = os.pipe()
runner = os.fork()
if runner == 0:  # the candidate: double fork, setsid, and one more child below the escapee
    os.close(r)
    if os.fork() == 0:
        os.setsid()
        inner = os.fork()
        if inner == 0:
            time.sleep(60)
            os._exit(0)
        os.write(w, f"{os.getpid()} {inner}\\n".encode())
        time.sleep(60)
        os._exit(0)
    os._exit(0)
os.close(w)
escaped, inner = map(int, os.fdopen(r).readline().split())
os.waitpid(runner, 0)
with open(f"/proc/{escaped}/stat") as f:
    escaped_ppid = int(f.read().rsplit(")", 1)[1].split()[1])
adopted = c.children_of(me)
reaped = c.reap_orphans({kept})
kept_alive = os.waitpid(kept, os.WNOHANG) == (0, 0)
gone = [not os.path.exists(f"/proc/{pid}") for pid in (escaped, inner)]
left = c.children_of(me)
for pid, is_gone in zip((escaped, inner), gone):
    if not is_gone:  # reap_orphans failed: do not leave them sleeping for a minute
        os.kill(pid, 9)
os.kill(kept, 9)
os.waitpid(kept, 0)
print(json.dumps(dict(subreaper=subreaper, me=me, kept=kept, escaped=escaped, inner=inner,
                      escaped_ppid=escaped_ppid, adopted=adopted, reaped=reaped,
                      kept_alive=kept_alive, gone=gone, left=left)))
"""


def test_subreaper_adopts_escaped_grandchild_and_reap_orphans_kills_it() -> None:
    out = _run_python(_ESCAPE)
    assert out["subreaper"] is True
    # The runner exited: its setsid grandchild went to the subreaper, not to init.
    assert out["escaped_ppid"] == out["me"]
    assert out["escaped"] in out["adopted"] and out["kept"] in out["adopted"]
    # The escapee and its own child (reparented to us once the escapee died) are killed and reaped;
    # the kept runner is neither killed nor waited for.
    assert out["reaped"] == sorted([out["escaped"], out["inner"]])
    assert out["gone"] == [True, True]
    assert out["kept_alive"] is True
    assert out["left"] == [out["kept"]]


_ORPHANED = """
import json, os, time
from kernelevolve.eval import containment as c

def dead(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in "ZX"
    except OSError:
        return True

armed_r, armed_w = os.pipe()
out_r, out_w = os.pipe()
parent = os.fork()
if parent == 0:
    me = os.getpid()
    child = os.fork()
    if child == 0:
        os.write(armed_w, b"1" if c.die_with_parent(me) else b"0")
        time.sleep(60)
        os._exit(0)
    armed = os.read(armed_r, 1)
    os.write(out_w, armed + f" {child}\\n".encode())
    os._exit(0)  # the parent dies: the death signal kills the child
os.close(out_w)
line = os.fdopen(out_r).readline()
os.waitpid(parent, 0)
child = int(line[1:])
deadline = time.monotonic() + 5
while not dead(child) and time.monotonic() < deadline:
    time.sleep(0.02)
killed_by_death_signal = dead(child)
if not killed_by_death_signal:
    os.kill(child, 9)
print(json.dumps({"armed": line[0] == "1", "killed_by_death_signal": killed_by_death_signal}))
"""


def test_die_with_parent_kills_the_child_when_its_parent_exits() -> None:
    out = _run_python(_ORPHANED)
    assert out["armed"] is True
    assert out["killed_by_death_signal"] is True


# ---------------------------------------------------------------------------------------------------
# tree discovery and kill_tree

_TREE = """
import json, os, sys, time

def sleeper(setsid=False):
    pid = os.fork()
    if pid == 0:
        if setsid:
            os.setsid()
        time.sleep(120)
        os._exit(0)
    return pid

a = os.fork()
if a == 0:  # a child with a child of its own
    a1 = sleeper()
    os.write(1, (json.dumps({"a1": a1}) + "\\n").encode())  # one write: lines of two processes never mix
    time.sleep(120)
    os._exit(0)
b = sleeper(setsid=True)  # left the process group: a descendant only
spared = sleeper()
r, w = os.pipe()
c = os.fork()
if c == 0:  # exits at once, leaving its child in our group but outside our tree
    c1 = sleeper()
    os.write(w, f"{c1}\\n".encode())
    os._exit(0)
os.close(w)
c1 = int(os.fdopen(r).readline())
os.waitpid(c, 0)
os.write(1, (json.dumps({"root": os.getpid(), "a": a, "b": b, "spared": spared, "c1": c1}) + "\\n").encode())
time.sleep(120)
"""


@pytest.fixture()
def tree() -> Iterator[tuple[subprocess.Popen[str], dict[str, int]]]:
    """A process tree in its own session, with its pids; whatever survives the test is killed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _TREE], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert proc.stdout is not None
    pids: dict[str, int] = {}
    while len(pids) < 6:
        pids.update(json.loads(proc.stdout.readline()))
    try:
        yield proc, pids
    finally:
        for pid in pids.values():
            if not _dead(pid):
                os.kill(pid, 9)
        proc.wait(timeout=10)


def test_children_and_descendants_from_proc(tree, monkeypatch: pytest.MonkeyPatch) -> None:
    _proc, pids = tree
    children = sorted([pids["a"], pids["b"], pids["spared"]])
    descendants = sorted([*children, pids["a1"]])
    assert containment.children_of(pids["root"]) == children
    assert containment.descendants_of(pids["root"]) == descendants
    assert pids["c1"] not in containment.descendants_of(pids["root"])  # orphaned: reparented away
    # The /proc/*/stat scan (kernels without CONFIG_PROC_CHILDREN) finds the same.
    monkeypatch.setattr(containment, "_CHILDREN_FILES", False)
    assert containment.children_of(pids["root"]) == children
    assert containment.descendants_of(pids["root"]) == descendants


def test_children_of_a_gone_process_is_empty() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert containment.children_of(proc.pid) == []
    assert containment.descendants_of(proc.pid) == []


def test_kill_tree_kills_descendants_and_group_but_spares_except_pids(tree) -> None:
    proc, pids = tree
    targets = [pids[name] for name in ("root", "a", "a1", "b", "c1")]
    killed = containment.kill_tree(pids["root"], except_pids=[pids["spared"]])
    assert sorted(killed) == sorted(targets)
    assert proc.wait(timeout=10) == -9
    assert _wait_dead(targets) == []
    assert not _dead(pids["spared"])
    # Nothing of the tree is left but the spared process, which stays in the group.
    assert containment.kill_tree(pids["root"], except_pids=[pids["spared"]]) == []


def test_kill_tree_never_kills_the_caller() -> None:
    """In a fresh interpreter with no children (this test process may hold a runner zygote)."""
    script = "import os; from kernelevolve.eval import containment as c; print(c.kill_tree(os.getpid()))"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"


# ---------------------------------------------------------------------------------------------------
# memory

_MEMORY = """
import json, resource
from kernelevolve.eval import containment as c

def allocate(n):
    try:
        bytearray(n)
        return "ok"
    except MemoryError:
        return "MemoryError"

before = resource.getrlimit(resource.RLIMIT_DATA)
unset = c.limit_memory(None)
unchanged = resource.getrlimit(resource.RLIMIT_DATA) == before
big_before = allocate(1 << 30)
limited = c.limit_memory(256 << 20)
print(json.dumps(dict(unset=unset, limited=limited, unchanged=unchanged, big_before=big_before, limit=resource.getrlimit(resource.RLIMIT_DATA),
                      small_after=allocate(16 << 20), big_after=allocate(1 << 30))))
"""


def test_limit_memory_makes_a_large_allocation_fail() -> None:
    out = _run_python(_MEMORY)
    assert out["unset"] is False and out["unchanged"] is True  # None: no limit
    assert out["limited"] is True
    assert out["big_before"] == "ok"
    assert out["limit"] == [256 << 20, 256 << 20]  # hard = soft: the candidate cannot raise it
    assert out["small_after"] == "ok"
    assert out["big_after"] == "MemoryError"


def test_rss_bytes_sees_a_child_tree_memory() -> None:
    script = "import time; b = b'x' * (200 << 20); print('ready', flush=True); time.sleep(60)"
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        assert containment.tree_rss_bytes(child.pid) >= 200 << 20
        assert containment.rss_bytes([child.pid]) >= 200 << 20
    finally:
        child.kill()
        child.wait()
    assert containment.rss_bytes([child.pid]) == 0  # reaped: counts nothing


# ---------------------------------------------------------------------------------------------------
# Landlock

_LANDLOCK = """
import json, os, sys
from kernelevolve.eval import landlock as c

allowed, other = sys.argv[1:3]
existing = os.path.join(other, "existing.txt")

def attempt(action):
    try:
        action()
        return "ok"
    except PermissionError:
        return "PermissionError"
    except OSError as error:
        return type(error).__name__ + ":" + str(error.errno)

def write(path, mode="w"):
    with open(path, mode) as f:
        f.write("data")

def read(path):
    with open(path) as f:
        assert f.read() == "secret"

restricted = c.restrict_writes([allowed, "/dev/null"])
result = dict(
    restricted=restricted,
    write_allowed=attempt(lambda: write(os.path.join(allowed, "new.txt"))),
    mkdir_allowed=attempt(lambda: os.mkdir(os.path.join(allowed, "sub"))),
    rename_allowed=attempt(lambda: os.rename(os.path.join(allowed, "new.txt"), os.path.join(allowed, "sub", "n"))),
    devnull=attempt(lambda: write(os.devnull)),
    create_other=attempt(lambda: write(os.path.join(other, "new.txt"))),
    append_other=attempt(lambda: write(existing, "a")),
    remove_other=attempt(lambda: os.remove(existing)),
    mkdir_other=attempt(lambda: os.mkdir(os.path.join(other, "sub"))),
    move_into_other=attempt(lambda: os.rename(os.path.join(allowed, "sub", "n"), os.path.join(other, "n"))),
    truncate_other=attempt(lambda: os.truncate(existing, 0)),
    read_other=attempt(lambda: read(existing)),
    abi=c.landlock_abi(),
)
pid = os.fork()  # the sandbox is inherited
if pid == 0:
    os._exit(0 if attempt(lambda: write(os.path.join(other, "child.txt"))) == "PermissionError" else 1)
result["child_denied"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
print(json.dumps(result))
"""

needs_landlock = pytest.mark.skipif(
    landlock.landlock_abi() == 0, reason="Landlock unavailable (kernel < 5.13 or LSM not enabled)"
)


@needs_landlock
def test_restrict_writes_allows_only_the_given_dirs(tmp_path: Path) -> None:
    # Landlock binds root as well, so this runs (and must deny) under any uid.
    allowed, other = tmp_path / "allowed", tmp_path / "other"
    allowed.mkdir()
    other.mkdir()
    (other / "existing.txt").write_text("secret")
    out = _run_python(_LANDLOCK, str(allowed), str(other))
    assert out["restricted"] is True
    assert out["write_allowed"] == out["mkdir_allowed"] == out["devnull"] == "ok"
    if out["abi"] >= 2:  # ABI 1 denies every rename across directories
        assert out["rename_allowed"] == "ok"
        assert (allowed / "sub" / "n").read_text() == "data"
    for action in ("create_other", "append_other", "remove_other", "mkdir_other"):
        assert out[action] == "PermissionError", action
    assert out["move_into_other"] != "ok"  # EACCES, or EXDEV where Landlock refuses the reparenting
    if out["abi"] >= 3:
        assert out["truncate_other"] == "PermissionError"
    assert out["read_other"] == "ok"
    assert out["child_denied"] is True
    assert (other / "existing.txt").read_text() == "secret"
    assert sorted(p.name for p in other.iterdir()) == ["existing.txt"]


_THREADED = """
import json, threading, time
from kernelevolve.eval import landlock as c

threading.Thread(target=time.sleep, args=(5,), daemon=True).start()
try:
    c.restrict_writes(["/tmp"])
    outcome = "restricted"
except RuntimeError:
    outcome = "RuntimeError"
print(json.dumps({"outcome": outcome}))
"""


@needs_landlock
def test_restrict_writes_refuses_a_multithreaded_process() -> None:
    # Landlock binds only the calling thread: another thread would stay free to write.
    assert _run_python(_THREADED)["outcome"] == "RuntimeError"


def test_restrict_writes_handles_every_abi() -> None:
    # What each ABI may handle is a superset of the previous one, and ABI 1 knows no REFER/TRUNCATE.
    masks = [landlock._handled_write_access(abi) for abi in range(1, 8)]
    assert all(later & earlier == earlier for earlier, later in zip(masks, masks[1:], strict=False))
    assert masks[0] & (landlock._ACCESS_FS_REFER | landlock._ACCESS_FS_TRUNCATE) == 0
    assert masks[2] & landlock._ACCESS_FS_TRUNCATE
    assert [landlock._ruleset_size(abi) for abi in (1, 3, 4, 5, 6, 7)] == [8, 8, 16, 16, 24, 24]
    assert landlock.ctypes.sizeof(landlock._PathBeneathAttr) == 12  # packed, as the kernel's


# ---------------------------------------------------------------------------------------------------
# not_dumpable

_DUMPABLE = """
import ctypes, json, os, sys
from kernelevolve.eval import containment as c

protect = sys.argv[1] == "1"
if os.geteuid() == 0:
    # Root reads any process's memory (CAP_SYS_PTRACE): become an ordinary user first, as the
    # candidate's runner is. Changing uid clears the dumpable flag; set it back for the control.
    try:
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
    except OSError as error:
        print(json.dumps({"skip": f"cannot drop root: {error}"}))
        sys.exit(0)
    ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
ready_r, ready_w = os.pipe()
done_r, done_w = os.pipe()
target = os.fork()
if target == 0:  # the judge
    ok = c.not_dumpable() if protect else True
    os.write(ready_w, b"1" if ok else b"0")
    os.read(done_r, 1)
    os._exit(0)
protected_ok = os.read(ready_r, 1) == b"1"

def attempt(name):
    try:
        open(f"/proc/{target}/{name}", "rb").close()
        return "ok"
    except PermissionError:
        return "PermissionError"

result = dict(uid=os.geteuid(), protected_ok=protected_ok, mem=attempt("mem"), environ=attempt("environ"))
os.write(done_w, b"1")
os.waitpid(target, 0)
print(json.dumps(result))
"""


@pytest.mark.parametrize("protect", [False, True], ids=["control", "not_dumpable"])
def test_not_dumpable_hides_memory_from_a_same_user_process(protect: bool) -> None:
    out = _run_python(_DUMPABLE, "1" if protect else "0")
    if "skip" in out:
        pytest.skip(out["skip"])
    assert out["uid"] != 0  # running as root the check would prove nothing
    assert out["protected_ok"] is True
    expected = "PermissionError" if protect else "ok"
    assert out["mem"] == expected
    assert out["environ"] == expected


def _write_beside_the_search(
    tmp_path: Path,
    platform: object,
    add_kernel: object,
    add_spec: object,
    fast_settings: object,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kernelevolve.eval import harness, landlock
    from kernelevolve.types import Candidate, EvalRequest, Status

    if landlock.landlock_abi() == 0:
        pytest.skip("the kernel offers no Landlock")
    target = tmp_path / "runs" / "graph.jsonl"
    target.parent.mkdir()
    monkeypatch.setattr(harness, "_static_stage", lambda *args, **kwargs: None)
    forging = f"try:\n    open({str(target)!r}, 'a').write('forged')\nexcept OSError:\n    pass\n"
    source = add_kernel(prologue="pass").replace("import torch\n", "import torch\n" + forging, 1)  # type: ignore[operator]
    request = EvalRequest(Candidate(source, "triton", "t"), add_spec, platform.name, fast_settings)  # type: ignore[attr-defined]
    report = harness.evaluate(request, platform)  # type: ignore[arg-type]
    assert report.status is Status.OK, report.feedback
    assert not target.exists()


def test_a_runner_cannot_write_where_the_search_keeps_its_files(
    tmp_path: Path,
    cpu_platform: object,
    add_kernel: object,
    add_spec: object,
    fast_settings: object,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A candidate writing next to the search's files (a run directory under the temp folder) at import:
    the runner's sandbox refuses the write, and the kernel is still judged on its merits."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    _write_beside_the_search(tmp_path, cpu_platform, add_kernel, add_spec, fast_settings, monkeypatch)


@pytest.mark.gpu
def test_a_gpu_runner_cannot_write_where_the_search_keeps_its_files(
    tmp_path: Path,
    add_kernel: object,
    add_spec: object,
    fast_settings: object,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same on a GPU, where a runner's temporary files are its own too (the machine's temp folder, which
    may hold the search's runs, is not writable to it)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from tests.adversarial.test_hacks import _gpu_platform

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    _write_beside_the_search(tmp_path, _gpu_platform(), add_kernel, add_spec, fast_settings, monkeypatch)
