"""The knowledge base: document chunks embedded into a FAISS inner-product index, with metadata filters.

The index and its metadata live in a cache folder (default `cache_dir()/kb`), never in the repository.
Metadata records a content key (documents + chunking + encoder name); `KnowledgeBase.load` rebuilds
whenever the key of the current documents differs, so editing a document is enough to refresh it.

Search is exhaustive: the corpus is a few hundred chunks, so scoring every chunk is exact, takes well
under a millisecond, and lets metadata filters run in Python without FAISS id selectors.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelevolve.kb.documents import (
    KINDS,
    Chunk,
    Document,
    chunk_document,
    content_hash,
    load_documents,
)
from kernelevolve.kb.encoder import Encoder, KBUnavailable, default_encoder
from kernelevolve.paths import KNOWLEDGE_BASE_DIR, cache_dir

log = logging.getLogger(__name__)

META_FILE = "meta.json"
FORMAT_VERSION = 1
SNIPPET_CHARS = 280
ENCODE_BATCH = 64  # chunks embedded per step of `build` (a progress bar moves per step)


@dataclass(frozen=True)
class Hit:
    doc_id: str
    title: str
    score: float  # cosine similarity of the best-matching chunk
    kind: str
    snippet: str  # start of that chunk, for prompts and the CLI


def default_kb_dir() -> Path:
    return cache_dir() / "kb"


def _stack(parts: list[Any]) -> Any:
    import numpy as np

    return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)


def _faiss() -> Any:
    try:
        import faiss
    except ImportError:
        raise KBUnavailable("faiss is not installed; pip install 'kernelevolve[kb]'") from None
    return faiss


def _atomic_write(path: Path, write: Any) -> None:
    """Write through a temporary file in the same folder and rename, so readers never see half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _snippet(chunk: Chunk) -> str:
    body = chunk.text.split("\n", 1)[1] if "\n" in chunk.text else chunk.text
    text = re.sub(r"\s+", " ", body).strip()
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 3].rstrip() + "..."


class KnowledgeBase:
    """Embedded documents plus a FAISS index; build with `build`, open with `load`."""

    def __init__(
        self,
        documents: Sequence[Document],
        chunks: Sequence[Chunk],
        index: Any,
        encoder: Encoder,
        directory: Path,
        content_key: str,
    ) -> None:
        self._documents = {doc.id: doc for doc in documents}
        self._chunks = list(chunks)
        self._index = index
        self._encoder = encoder
        self.directory = directory
        self.content_key = content_key

    @property
    def documents(self) -> list[Document]:
        return list(self._documents.values())

    @property
    def chunk_count(self) -> int:
        return len(self._chunks)

    @property
    def index_path(self) -> Path:
        return self.directory / f"index-{self.content_key}.faiss"

    def document(self, doc_id: str) -> Document:
        try:
            return self._documents[doc_id]
        except KeyError:
            raise KeyError(f"no knowledge-base document {doc_id!r}") from None

    @classmethod
    def build(
        cls,
        documents: Sequence[Document],
        encoder: Encoder | None = None,
        directory: Path | None = None,
        on_embedded: Callable[[int], None] | None = None,
    ) -> KnowledgeBase:
        """Embed every chunk, write the index and metadata into `directory`, and return the KB.
        `on_embedded` is told how many chunks each batch embedded (a progress bar's step)."""
        faiss = _faiss()
        encoder = encoder or default_encoder()
        directory = directory or default_kb_dir()
        directory.mkdir(parents=True, exist_ok=True)
        ids = [doc.id for doc in documents]
        if len(set(ids)) != len(ids):
            raise ValueError("document ids must be unique")
        chunks = [chunk for doc in documents for chunk in chunk_document(doc)]
        started = time.perf_counter()
        texts = [chunk.text for chunk in chunks]
        batches = [texts[i : i + ENCODE_BATCH] for i in range(0, len(texts), ENCODE_BATCH)] or [[]]
        parts = []
        for batch in batches:
            parts.append(encoder.encode(batch))
            if on_embedded is not None:
                on_embedded(len(batch))
        vectors = parts[0] if len(parts) == 1 else _stack(parts)
        index = faiss.IndexFlatIP(vectors.shape[1])
        index.add(vectors)
        key = content_hash(documents, salt=encoder.name)
        kb = cls(documents, chunks, index, encoder, directory, key)
        _atomic_write(kb.index_path, lambda tmp: faiss.write_index(index, tmp))
        meta = {
            "format": FORMAT_VERSION,
            "content_key": key,
            "encoder": encoder.name,
            "dim": int(vectors.shape[1]),
            "index_file": kb.index_path.name,
            "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "documents": [doc.to_json() for doc in documents],
            "chunks": [chunk.to_json() for chunk in chunks],
        }
        _atomic_write(directory / META_FILE, lambda tmp: Path(tmp).write_text(json.dumps(meta)))
        for stale in directory.glob("index-*.faiss"):
            if stale.name != kb.index_path.name:
                stale.unlink(missing_ok=True)
        log.info(
            "built KB: %d documents, %d chunks in %.1fs -> %s",
            len(documents),
            len(chunks),
            time.perf_counter() - started,
            kb.index_path,
        )
        return kb

    @classmethod
    def load(
        cls,
        directory: Path | None = None,
        encoder: Encoder | None = None,
        documents: Sequence[Document] | None = None,
        source: Path = KNOWLEDGE_BASE_DIR,
        rebuild: bool = True,
    ) -> KnowledgeBase:
        """Open the cached index; rebuild it when missing or when the documents changed.

        `documents` defaults to the documents under `source`. With `rebuild=False` a stale or
        missing index raises FileNotFoundError instead.
        """
        encoder = encoder or default_encoder()
        directory = directory or default_kb_dir()
        if documents is None:
            documents = load_documents(source)
        key = content_hash(documents, salt=encoder.name)
        meta = cls._read_meta(directory)
        index_file = directory / str(meta.get("index_file", "")) if meta else None
        if (
            meta is None
            or meta.get("format") != FORMAT_VERSION
            or meta.get("content_key") != key
            or index_file is None
            or not index_file.is_file()
        ):
            if not rebuild:
                raise FileNotFoundError(
                    f"{directory}: no up-to-date KB index; run python -m kernelevolve.kb build"
                )
            log.info("KB index in %s is missing or stale; rebuilding", directory)
            return cls.build(documents, encoder, directory)
        index = _faiss().read_index(str(index_file))
        chunks = [Chunk.from_json(c) for c in meta["chunks"]]
        if index.ntotal != len(chunks):
            log.warning("KB index %s does not match its metadata; rebuilding", index_file)
            return cls.build(documents, encoder, directory)
        return cls(documents, chunks, index, encoder, directory, key)

    @staticmethod
    def _read_meta(directory: Path) -> dict[str, Any] | None:
        path = directory / META_FILE
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("unreadable KB metadata %s (%s); rebuilding", path, exc)
            return None
        return data if isinstance(data, dict) else None

    def search(
        self,
        query: str,
        k: int = 5,
        platform: str | None = None,
        backend: str | None = None,
        tags: Sequence[str] = (),
        kinds: Sequence[str] = (),
    ) -> list[Hit]:
        """Top `k` documents for `query` (one hit per document, scored by its best chunk).

        Filters: a document passes `platform`/`backend` when it lists that name or `any`; `tags`
        when it shares at least one; `kinds` when its kind is among them.
        """
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        bad = [kind for kind in kinds if kind not in KINDS]
        if bad:
            raise ValueError(f"unknown document kinds {bad}; valid: {', '.join(KINDS)}")
        if not query.strip() or not self._chunks:
            return []
        vector = self._encoder.encode([query])
        scores, rows = self._index.search(vector, len(self._chunks))
        hits: list[Hit] = []
        seen: set[str] = set()
        for score, row in zip(scores[0], rows[0], strict=True):
            if row < 0:
                continue
            chunk = self._chunks[int(row)]
            if chunk.doc_id in seen:
                continue
            doc = self._documents.get(chunk.doc_id)
            if doc is None or not doc.matches(platform, backend, tags, kinds):
                continue
            seen.add(chunk.doc_id)
            hits.append(Hit(doc.id, doc.title, float(score), doc.kind, _snippet(chunk)))
            if len(hits) == k:
                break
        return hits
