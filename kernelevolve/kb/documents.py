"""Knowledge-base documents: Markdown files with a YAML front-matter block.

A document looks like::

    ---
    id: technique-split-k
    title: Split-K for tall-skinny GEMMs
    kind: technique                # hardware | dsl | technique | constraint
    platforms: [any]               # platform names, or [any]
    backends: [triton, cute]       # backend names, or [any]
    tags: [gemm, parallelism]
    ---
    Body in Markdown...

Long bodies are cut into chunks at `##` headings because the sentence encoder only reads the first
few hundred word pieces of each text; each chunk carries the document title so it embeds in context.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kernelevolve.paths import KNOWLEDGE_BASE_DIR

KINDS = ("hardware", "dsl", "technique", "constraint")
ANY = "any"
REQUIRED_FIELDS = ("id", "title", "kind", "platforms", "backends", "tags")
_ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n---[ \t]*(?:\n|\Z)", re.DOTALL)
_HEADING = re.compile(r"^##[ \t]+(.+?)[ \t]*$", re.MULTILINE)
# Bumped when chunking changes, so cached indexes built the old way are rebuilt.
CHUNKING_VERSION = "3"


class DocumentError(ValueError):
    """A knowledge-base file is malformed; the message names the file."""


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    kind: str
    platforms: tuple[str, ...]
    backends: tuple[str, ...]
    tags: tuple[str, ...]
    text: str  # Markdown body without the front matter
    path: str

    def matches(
        self,
        platform: str | None = None,
        backend: str | None = None,
        tags: Sequence[str] = (),
        kinds: Sequence[str] = (),
    ) -> bool:
        """Metadata filter: `any` in platforms/backends matches every value; tags match on overlap."""
        if platform is not None and ANY not in self.platforms and platform.lower() not in self.platforms:
            return False
        if backend is not None and ANY not in self.backends and backend.lower() not in self.backends:
            return False
        if tags and not set(self.tags) & {t.lower() for t in tags}:
            return False
        return not (kinds and self.kind not in kinds)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "kind": self.kind,
            "platforms": list(self.platforms),
            "backends": list(self.backends),
            "tags": list(self.tags),
            "text": self.text,
            "path": self.path,
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> Document:
        return Document(
            id=data["id"],
            title=data["title"],
            kind=data["kind"],
            platforms=tuple(data["platforms"]),
            backends=tuple(data["backends"]),
            tags=tuple(data["tags"]),
            text=data["text"],
            path=data["path"],
        )


@dataclass(frozen=True)
class Chunk:
    """One embedded piece of a document: a section, prefixed with the document title."""

    doc_id: str
    heading: str
    text: str  # what the encoder sees

    def to_json(self) -> dict[str, str]:
        return {"doc_id": self.doc_id, "heading": self.heading, "text": self.text}

    @staticmethod
    def from_json(data: dict[str, str]) -> Chunk:
        return Chunk(doc_id=data["doc_id"], heading=data["heading"], text=data["text"])


def _string_list(value: object, field_name: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or (not value and field_name != "tags"):
        raise DocumentError(f"{where}: {field_name!r} must be a non-empty list of strings")
    items = []
    for item in value:
        if not isinstance(item, str | int | float) or not str(item).strip():
            raise DocumentError(f"{where}: {field_name!r} has a non-string entry {item!r}")
        items.append(str(item).strip().lower())
    return tuple(items)


def parse_document(source: str, path: str | Path) -> Document:
    """Parse one document's text. Raises DocumentError naming `path` when anything is wrong."""
    where = str(path)
    match = _FRONT_MATTER.match(source.replace("\r\n", "\n"))
    if match is None:
        raise DocumentError(f"{where}: missing YAML front matter (a '---' block at the top)")
    try:
        meta = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise DocumentError(f"{where}: front matter is not valid YAML: {exc}") from None
    if not isinstance(meta, dict):
        raise DocumentError(f"{where}: front matter must be a mapping")
    missing = [name for name in REQUIRED_FIELDS if name not in meta]
    if missing:
        raise DocumentError(f"{where}: front matter lacks {', '.join(missing)}")
    unknown = sorted(set(meta) - set(REQUIRED_FIELDS))
    if unknown:
        raise DocumentError(f"{where}: unknown front-matter keys {unknown}; valid: {list(REQUIRED_FIELDS)}")
    doc_id = str(meta["id"]).strip()
    if not _ID_PATTERN.match(doc_id):
        raise DocumentError(f"{where}: id {doc_id!r} must be lower-case letters, digits, '-', '_' or '.'")
    title = str(meta["title"] or "").strip()
    if not title:
        raise DocumentError(f"{where}: title is empty")
    kind = str(meta["kind"]).strip().lower()
    if kind not in KINDS:
        raise DocumentError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
    body = source.replace("\r\n", "\n")[match.end() :].strip()
    if not body:
        raise DocumentError(f"{where}: body is empty")
    return Document(
        id=doc_id,
        title=title,
        kind=kind,
        platforms=_string_list(meta["platforms"], "platforms", where),
        backends=_string_list(meta["backends"], "backends", where),
        tags=_string_list(meta["tags"] or [], "tags", where),
        text=body,
        path=where,
    )


def load_documents(directory: Path = KNOWLEDGE_BASE_DIR) -> list[Document]:
    """Every `*.md` under `directory` (README.md excepted), sorted by path; ids must be unique."""
    if not directory.is_dir():
        raise DocumentError(f"{directory}: knowledge-base directory does not exist")
    documents: list[Document] = []
    seen: dict[str, str] = {}
    for path in sorted(directory.rglob("*.md")):
        if path.name.lower() == "readme.md":
            continue
        doc = parse_document(path.read_text(encoding="utf-8"), path.relative_to(directory))
        if doc.id in seen:
            raise DocumentError(f"{doc.path}: id {doc.id!r} is already used by {seen[doc.id]}")
        seen[doc.id] = doc.path
        documents.append(doc)
    if not documents:
        raise DocumentError(f"{directory}: no documents found")
    return documents


def chunk_document(doc: Document, max_words: int = 160) -> list[Chunk]:
    """Split at `##` headings, then at paragraph breaks so no chunk runs far past `max_words`."""
    sections: list[tuple[str, str]] = []
    starts = [m for m in _HEADING.finditer(doc.text)]
    intro = doc.text[: starts[0].start()] if starts else doc.text
    if intro.strip():
        sections.append(("", intro.strip()))
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(doc.text)
        body = doc.text[m.end() : end].strip()
        if body:
            sections.append((m.group(1).strip(), body))
    chunks: list[Chunk] = []
    for heading, body in sections:
        prefix = f"{doc.title}. {heading}." if heading else f"{doc.title}."
        for piece in _split_paragraphs(body, max_words):
            chunks.append(Chunk(doc.id, heading, f"{prefix}\n{piece}"))
    return chunks


def _split_paragraphs(body: str, max_words: int) -> list[str]:
    pieces: list[str] = []
    current: list[str] = []
    words = 0
    paragraphs: list[str] = []
    for para in re.split(r"\n\s*\n", body):
        # A single over-long paragraph (usually a list) is cut at line breaks instead.
        paragraphs.extend(para.splitlines() if len(para.split()) > max_words else [para])
    for para in paragraphs:
        n = len(para.split())
        if current and words + n > max_words:
            pieces.append("\n\n".join(current))
            current, words = [], 0
        current.append(para.strip())
        words += n
    if current:
        pieces.append("\n\n".join(current))
    return pieces


def content_hash(documents: Iterable[Document], salt: str = "") -> str:
    """Hash of everything that shapes the index: documents, chunking scheme and `salt` (encoder name)."""
    digest = hashlib.sha256(f"{CHUNKING_VERSION}\n{salt}\n".encode())
    for doc in sorted(documents, key=lambda d: d.id):
        digest.update(repr(sorted(doc.to_json().items())).encode())
    return digest.hexdigest()[:16]
