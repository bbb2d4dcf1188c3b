"""Knowledge base: our documents embedded into a FAISS index, and the store of past wins.

Nothing here imports faiss or sentence-transformers at module level; they load on first use and
raise `KBUnavailable` (with the install hint) when the `kb` extra is missing.
"""

from __future__ import annotations

from kernelevolve.kb.documents import KINDS, Chunk, Document, DocumentError, load_documents, parse_document
from kernelevolve.kb.encoder import Encoder, KBUnavailable, SentenceTransformerEncoder, default_encoder
from kernelevolve.kb.index import Hit, KnowledgeBase
from kernelevolve.kb.past_wins import PastWin, PastWinStore

__all__ = [
    "KINDS",
    "Chunk",
    "Document",
    "DocumentError",
    "Encoder",
    "Hit",
    "KBUnavailable",
    "KnowledgeBase",
    "PastWin",
    "PastWinStore",
    "SentenceTransformerEncoder",
    "default_encoder",
    "load_documents",
    "parse_document",
]
