"""Tensors the judge owns and a runner maps: inputs the judge made, slots the runner writes outputs into.

The judge (the process that never imports candidate code) allocates every tensor that crosses to a
runner: host tensors in files under a per-evaluation directory in shared memory (`/dev/shm`), device
tensors through CUDA IPC. What goes to the runner is a `TensorRef` (picklable: the judge-to-runner
direction is trusted); nothing the runner sends back is ever unpickled (`runner_channel`).

CUDA IPC exports an allocation, not a tensor: the runner maps the caching allocator's whole segment, and a
Triton kernel loads and stores at any address in it. So an arena's device tensors come from a private
memory pool whose segments hold nothing else, and only those can be shared: the judge's reference
outputs and pristine inputs never sit beside memory a runner maps (`experiments/adversarial_gpu/ipc_reach.py`).
"""

from __future__ import annotations

import mmap
import os
import secrets
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelevolve.eval import host_reads

if TYPE_CHECKING:
    import torch

_SHM_ROOT = Path("/dev/shm")


@dataclass(frozen=True)
class TensorRef:
    """How a runner maps one judge tensor: a shared file (host) or a CUDA IPC rebuild (device)."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str
    storage_offset: int = 0
    path: str = ""  # host: the file holding the storage
    nbytes: int = 0
    cuda: tuple[Any, ...] = ()  # device: torch's own reduction of the tensor (rebuild function, args)

    def open(self) -> torch.Tensor:
        """The tensor in this (runner) process, sharing the judge's memory."""
        import torch

        if self.cuda:
            rebuild, args = self.cuda
            tensor = rebuild(*args)
            # Kept alive: PyTorch maps a handle it still holds to the same storage, so a judge tensor
            # sent again has the same address (a cache keyed by address meets new values there:
            # `tests/adversarial/hacks/cache_by_data_ptr_hidden.py`), until `end_request` lets it go.
            _KEPT_CUDA.append(tensor)
            return tensor  # type: ignore[no-any-return]
        flat = _MAPPED.get(self.path)
        if flat is None:  # one mapping per file: the same judge tensor has the same address every call
            with open(self.path, "r+b") as handle:
                mapped = mmap.mmap(handle.fileno(), self.nbytes)
            with host_reads.harness_memory():
                flat = _MAPPED[self.path] = torch.frombuffer(mapped, dtype=torch.uint8, count=self.nbytes)
        return flat.view(getattr(torch, self.dtype)).as_strided(self.shape, self.stride, self.storage_offset)


_KEPT_CUDA: list[Any] = []  # device tensors this request mapped
_KEPT_BEFORE: list[Any] = []  # and the previous request's
_MAPPED: dict[str, Any] = {}  # a runner serves one evaluation: its mappings live as long as it


def open_tree(value: Any) -> Any:
    """`value` with every `TensorRef` in it (plain lists, tuples, dicts) opened."""
    if isinstance(value, TensorRef):
        return value.open()
    if isinstance(value, (list, tuple)):
        return type(value)(open_tree(v) for v in value)
    if isinstance(value, dict):
        return {k: open_tree(v) for k, v in value.items()}
    return value


def end_request() -> None:
    """Let go of the previous request's device tensors, keeping this request's.

    CUDA IPC keeps an exported block allocated in the judge until every process that mapped it lets go, so
    a runner holding every trial's inputs and slots held the judge at many input sizes on multi-GiB
    problems (`experiments/adversarial_gpu/README.md`, session 36). One request's are kept into the next:
    a tensor the judge sends again there (a trial's inputs refilled in place) is found by PyTorch's handle
    cache at the address it had; released at once, it would be mapped anew, perhaps elsewhere.
    """
    if not _KEPT_BEFORE and not _KEPT_CUDA:
        return
    import torch

    try:
        torch.cuda.synchronize()  # a failed request skipped its own: kernels may still use them
    finally:
        _KEPT_BEFORE[:] = _KEPT_CUDA
        _KEPT_CUDA.clear()


def drop_mapped() -> None:
    """Let go of every judge tensor mapped here (the evaluation is over)."""
    drop_mapped_device()
    _MAPPED.clear()


def drop_mapped_device() -> None:
    """Let go of the judge's device tensors mapped here so far (the checks are over: timing maps its own)."""
    _KEPT_CUDA.clear()
    _KEPT_BEFORE.clear()


class SharedArena:
    """Judge tensors a runner can map, for one evaluation; `close()` removes the host files."""

    def __init__(self, device: str, directory: Path | None = None) -> None:
        self.device = device
        self._dir: Path | None = directory  # default: a fresh folder in /dev/shm, made when first needed
        self._refs: dict[int, tuple[Any, TensorRef]] = {}  # id -> (the tensor, kept alive; its ref)
        self._pool: Any = None  # torch.cuda.MemPool of the device tensors, made when first needed
        self._device_storages: set[int] = set()  # their storages' addresses: what `ref` may share

    @property
    def directory(self) -> Path:
        """Where this arena's host files live."""
        if self._dir is None:
            self._dir = shared_folder()
        return self._dir

    def empty_strided(
        self, shape: tuple[int, ...], stride: tuple[int, ...], dtype: Any, *, host: bool = False
    ) -> torch.Tensor:
        """Uninitialised, on the arena's device (or in host shared memory with `host`)."""
        import torch

        if self.device.startswith("cuda") and not host:
            if self._pool is None:
                self._pool = torch.cuda.MemPool()
            with torch.cuda.use_mem_pool(self._pool, device=self.device):
                tensor = torch.empty_strided(shape, stride, dtype=dtype, device=self.device)
            self._device_storages.add(tensor.untyped_storage().data_ptr())
            return tensor
        itemsize = torch.empty((), dtype=dtype).element_size()
        nbytes = max(_span(shape, stride) * itemsize, itemsize)
        path = self.directory / secrets.token_hex(8)
        with open(path, "w+b") as handle:
            handle.truncate(nbytes)
            mapped = mmap.mmap(handle.fileno(), nbytes)
        with host_reads.harness_memory():
            flat = torch.frombuffer(mapped, dtype=torch.uint8, count=nbytes)
        tensor = flat.view(dtype).as_strided(shape, stride, 0)
        ref = TensorRef(tuple(shape), tuple(stride), _dtype_name(dtype), 0, str(path), nbytes)
        self._refs[id(tensor)] = (tensor, ref)
        return tensor

    def empty_like(self, like: torch.Tensor) -> torch.Tensor:
        """`like`'s shape and dtype, with its strides where they are dense (a permuted layout kept)."""
        return self.empty_strided(*dense_layout(like), like.dtype)

    def empty_like_many(self, like: torch.Tensor, count: int) -> list[torch.Tensor]:
        """`count` tensors as `empty_like(like)` makes them, views into one arena block: one file or one CUDA
        IPC export for all, which a runner maps once (a timing's ring holds up to a slot per call)."""
        sizes, steps = dense_layout(like)
        block = self.empty_strided((count, *sizes), (max(_span(sizes, steps), 1), *steps), like.dtype)
        views = [block[k] for k in range(count)]
        for view in views:
            self.register_view(block, view)
        return views

    def copy_of(self, value: torch.Tensor) -> torch.Tensor:
        shared = self.empty_like(value)
        shared.copy_(value)
        return shared

    def host_counter(self) -> torch.Tensor:
        """One int64 in host shared memory on any device: the judge reads it without touching the GPU."""
        import torch

        counter = self.empty_strided((1,), (1,), torch.int64, host=True)
        counter.zero_()
        return counter

    def register_view(self, base: torch.Tensor, view: torch.Tensor) -> None:
        """Make `view`, a slice of the arena tensor `base` (a guard-banded input, a ring's block), shareable by
        `ref`."""
        if view.device.type == "cuda":
            return
        _, ref = self._refs[id(base)]
        offset = (view.data_ptr() - base.data_ptr()) // view.element_size()
        view_ref = TensorRef(
            tuple(view.shape), tuple(view.stride()), _dtype_name(view.dtype), offset, ref.path, ref.nbytes
        )
        self._refs[id(view)] = (view, view_ref)

    def owns(self, tensor: torch.Tensor) -> bool:
        """Whether `tensor` (or the tensor it views) was made by this arena."""
        if tensor.device.type == "cuda":
            return tensor.untyped_storage().data_ptr() in self._device_storages
        entry = self._refs.get(id(tensor))
        return entry is not None and entry[0] is tensor

    def ref(self, tensor: torch.Tensor) -> TensorRef:
        """The runner's way to `tensor`, which this arena made (or a view of one, on a device)."""
        if not self.owns(tensor):
            raise ValueError(f"a {tensor.device.type} tensor must come from this arena to be shared")
        if tensor.device.type == "cuda":
            from torch.multiprocessing.reductions import reduce_tensor

            return TensorRef(
                tuple(tensor.shape),
                tuple(tensor.stride()),
                _dtype_name(tensor.dtype),
                cuda=reduce_tensor(tensor),
            )
        return self._refs[id(tensor)][1]

    def close(self) -> None:
        self._refs.clear()  # the maps close once the tensors over them are gone
        self._device_storages.clear()
        self._pool = None  # its segments go back to the driver once its tensors are gone
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def dense_layout(like: torch.Tensor) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The shape and strides `torch.empty_like` gives `like`: dense, a permuted layout kept."""
    import torch

    dense = torch.empty_like(like, device="meta")
    return tuple(dense.shape), tuple(dense.stride())


def _span(shape: tuple[int, ...], stride: tuple[int, ...]) -> int:
    """Elements from a tensor's first to its last, both counted (0 where it has none)."""
    return 1 + sum((size - 1) * step for size, step in zip(shape, stride, strict=True)) if all(shape) else 0


def shared_folder() -> Path:
    """A fresh folder in /dev/shm (memory, not disk), or the temp folder where there is none."""
    usable = _SHM_ROOT.is_dir() and os.access(_SHM_ROOT, os.W_OK)
    return Path(tempfile.mkdtemp(prefix="kernelevolve-shared-", dir=_SHM_ROOT if usable else None))


def _dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")
