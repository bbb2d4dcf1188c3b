"""What a process that maps one judge tensor through CUDA IPC can reach of the judge's other memory.

CUDA IPC exports an allocation, not a tensor: the receiver maps the caching allocator's whole segment
(`cudaIpcOpenMemHandle` on its base) and PyTorch hands it a storage at an offset inside. A Triton kernel
can load and store at any address, so a runner given one input may read or overwrite whatever else the
judge keeps in that segment (its reference outputs, its pristine copies of the inputs). This probe puts a
"secret" tensor beside a shared one, lets a child process scan the shared tensor's whole segment for the
secret and overwrite what it finds, and reports whether the secret was found and changed: once with the
default allocator, once with the shared tensor made in a private `torch.cuda.MemPool`. It also checks
that a pool's memory returns to the driver when the pool is dropped.
Usage on the device: python3 experiments/adversarial_gpu/ipc_reach.py
"""

from __future__ import annotations

import gc

import torch
import torch.multiprocessing as mp
import triton
import triton.language as tl

WORDS = 8  # the secret's first words the child looks for


@triton.jit
def _copy_window(src, dst, start, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst + offsets, tl.load(src + start + offsets, mask=mask), mask=mask)


@triton.jit
def _zero_words(src, at, WORDS_: tl.constexpr):
    offsets = tl.arange(0, WORDS_)
    tl.store(src + at + offsets, tl.zeros([WORDS_], dtype=tl.int32))


def _segment_of(ptr: int) -> tuple[int, int]:
    for segment in torch.cuda.memory_snapshot():
        if segment["address"] <= ptr < segment["address"] + segment["total_size"]:
            return int(segment["address"]), int(segment["total_size"])
    raise LookupError("no segment holds the pointer")


def _child(queue_in: mp.Queue, queue_out: mp.Queue) -> None:
    shared, offset_words, segment_words, secret_head = queue_in.get()
    words = shared.view(torch.int32)
    window = torch.empty(segment_words, dtype=torch.int32, device=words.device)
    _copy_window[(triton.cdiv(segment_words, 1024),)](words, window, -offset_words, segment_words, BLOCK=1024)
    torch.cuda.synchronize()
    seen = window.cpu()
    head = torch.tensor(secret_head, dtype=torch.int32)
    found = -1
    for start in range(0, segment_words - WORDS, 128):  # 512-byte blocks: the secret starts on one
        if torch.equal(seen[start : start + WORDS], head):
            found = start
            break
    if found >= 0:
        _zero_words[(1,)](words, found - offset_words, WORDS_=WORDS)
        torch.cuda.synchronize()
    queue_out.put(found)
    del shared, words


def _probe(label: str, pool: object | None, elements: int) -> None:
    secret = torch.randn(elements, device="cuda")
    if pool is None:
        shared = torch.randn(elements, device="cuda")
    else:
        with torch.cuda.use_mem_pool(pool):  # type: ignore[arg-type]
            shared = torch.randn(elements, device="cuda")
    torch.cuda.synchronize()
    base, size = _segment_of(shared.data_ptr())
    same = base <= secret.data_ptr() < base + size
    head = secret[:WORDS].view(torch.int32).cpu().tolist()
    context = mp.get_context("spawn")
    queue_in, queue_out = context.Queue(), context.Queue()
    child = context.Process(target=_child, args=(queue_in, queue_out))
    child.start()
    queue_in.put((shared, (shared.data_ptr() - base) // 4, size // 4, head))
    found = queue_out.get(timeout=120)
    child.join(60)
    torch.cuda.synchronize()
    changed = secret[:WORDS].view(torch.int32).cpu().tolist() != head
    print(
        f"{label} | {elements * 4 / 2**20:.3f} MiB | segment {size / 2**20:.0f} MiB | secret in the shared "
        f"segment: {same} | child found it: {found >= 0} | secret overwritten: {changed}"
    )


def _pool_release() -> None:
    gc.collect()
    torch.cuda.empty_cache()
    before = torch.cuda.memory_reserved()
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        held = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    during = torch.cuda.memory_reserved()
    del held
    torch.cuda.empty_cache()
    after_free = torch.cuda.memory_reserved()
    del pool
    gc.collect()
    torch.cuda.empty_cache()
    after_pool = torch.cuda.memory_reserved()
    mib = 2**20
    print(
        f"pool release | reserved MiB: before {before / mib:.0f}, 1 GiB held {during / mib:.0f}, freed + "
        f"empty_cache {after_free / mib:.0f}, pool dropped + empty_cache {after_pool / mib:.0f}"
    )


def main() -> None:
    print(torch.__version__, torch.cuda.get_device_name())
    print("allocator | tensor | segment | secret in the shared segment | child found it | secret overwritten")
    for elements in (4096, 1 << 19):  # 16 KiB (small pool), 2 MiB (large pool, 20 MiB segments)
        _probe("default", None, elements)
        _probe("private MemPool", torch.cuda.MemPool(), elements)
    _pool_release()


if __name__ == "__main__":
    main()
