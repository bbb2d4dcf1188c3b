"""Command line for the knowledge base.

python -m kernelevolve.kb build                      # embed knowledge_base/ into the cache
python -m kernelevolve.kb search "split-k for skinny GEMM" --platform h200 --backend triton --k 5
python -m kernelevolve.kb wins --platform h100       # list stored past wins
python -m kernelevolve.kb check                      # validate documents (no model needed)
"""

from __future__ import annotations

import os

# Before anything can import transformers: the model is shipped in a package, the hub is never asked.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import argparse  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

from kernelevolve.kb.documents import KINDS, DocumentError, chunk_document, load_documents  # noqa: E402
from kernelevolve.kb.encoder import KBUnavailable  # noqa: E402
from kernelevolve.kb.index import KnowledgeBase, default_kb_dir  # noqa: E402
from kernelevolve.kb.past_wins import PastWinStore  # noqa: E402
from kernelevolve.paths import KNOWLEDGE_BASE_DIR  # noqa: E402


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m kernelevolve.kb", description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=KNOWLEDGE_BASE_DIR, help="documents folder")
    parser.add_argument("--cache", type=Path, default=None, help="index folder (default: cache_dir()/kb)")
    parser.add_argument("-v", "--verbose", action="store_true")
    commands = parser.add_subparsers(dest="command", required=True)

    commands.add_parser("build", help="embed the documents and write the FAISS index")
    commands.add_parser("check", help="parse and validate the documents without embedding them")

    search = commands.add_parser("search", help="query the index (rebuilt first if stale)")
    search.add_argument("query")
    search.add_argument("--platform", default=None)
    search.add_argument("--backend", default=None)
    search.add_argument("--k", type=int, default=5)
    search.add_argument("--kind", action="append", default=[], choices=KINDS, help="repeatable")
    search.add_argument("--tag", action="append", default=[], help="repeatable; any one must match")

    wins = commands.add_parser("wins", help="list stored past wins")
    wins.add_argument("--platform", default=None)
    wins.add_argument("--backend", default=None)
    wins.add_argument("--dir", type=Path, default=None, help="store folder (default: cache_dir()/past_wins)")
    return parser


def _check(source: Path) -> int:
    documents = load_documents(source)
    kinds = Counter(doc.kind for doc in documents)
    chunks = sum(len(chunk_document(doc)) for doc in documents)
    summary = ", ".join(f"{kind} {kinds[kind]}" for kind in KINDS)
    print(f"{len(documents)} documents ({summary}), {chunks} chunks: OK")
    return 0


def _build(source: Path, cache: Path | None) -> int:
    from kernelevolve.kb.encoder import default_encoder
    from kernelevolve.results.progress import Progress

    documents = load_documents(source)
    chunks = sum(len(chunk_document(doc)) for doc in documents)
    with Progress(prefix="kb build: ") as progress:
        progress.phase("loading the sentence encoder")
        encoder = default_encoder()
        _ = encoder.dim  # loads the model
        progress.phase(f"embedding {len(documents)} documents", total=chunks, unit="chunks")
        kb = KnowledgeBase.build(
            documents, encoder, directory=cache or default_kb_dir(), on_embedded=progress.advance
        )
    print(f"{len(kb.documents)} documents, {kb.chunk_count} chunks")
    print(f"index: {kb.index_path}")
    return 0


def _search(args: argparse.Namespace) -> int:
    kb = KnowledgeBase.load(directory=args.cache, source=args.source)
    hits = kb.search(
        args.query, k=args.k, platform=args.platform, backend=args.backend, tags=args.tag, kinds=args.kind
    )
    if not hits:
        print("no documents match")
    for hit in hits:
        print(f"{hit.score:.3f}  {hit.doc_id:<40} {hit.title}")
    return 0


def _wins(args: argparse.Namespace) -> int:
    store = PastWinStore(args.dir)
    rows = [
        win
        for win in store.wins()
        if (args.platform is None or win.platform == args.platform)
        and (args.backend is None or win.backend == args.backend)
    ]
    if not rows:
        print(f"no past wins in {store.path}")
    for win in rows:
        compile_text = "-" if win.speedup_vs_compile is None else f"{win.speedup_vs_compile:.2f}x"
        print(
            f"{win.created:<20} {win.platform:<8} {win.backend:<7} {win.spec_name:<40} "
            f"eager {win.speedup_vs_eager:.2f}x  compile {compile_text}  [{win.candidate_id}]"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s"
    )
    try:
        if args.command == "check":
            return _check(args.source)
        if args.command == "build":
            return _build(args.source, args.cache)
        if args.command == "search":
            return _search(args)
        return _wins(args)
    except (DocumentError, KBUnavailable, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
