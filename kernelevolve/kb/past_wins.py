"""Past wins: kernels that beat the baselines before, kept so similar specs can start from them.

Storage is one append-only JSONL file (`wins.jsonl`) per store directory; each line holds the win,
the name of the encoder that embedded it and the embedding of its text summary (spec name, tags,
shapes, an excerpt of the reference code) as base64 float32. A line embedded by a different encoder
is re-embedded in memory when loaded, and a torn last line (a writer killed mid-line) is skipped.

Retrieval (`similar`) ranks by cosine similarity of summaries, plus a bonus for tag overlap
(Jaccard, `tag_bonus` at most) and a larger one for the very same spec (`same_spec_bonus`).
Platform filter: wins recorded on the requested platform come first; when fewer than `k` of them
exist, wins from other platforms of the same vendor (h100 for an h200 query, mi250 for mi300x) fill
the remaining places, since their kernels usually run there too and the harness re-checks them.
"""

from __future__ import annotations

import ast
import base64
import functools
import json
import logging
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kernelevolve.kb.encoder import Encoder, default_encoder
from kernelevolve.paths import cache_dir
from kernelevolve.platforms import PlatformError, load_platform
from kernelevolve.specs.structure import spec_structure
from kernelevolve.types import KernelSpec, ShapeCase, candidate_id

log = logging.getLogger(__name__)

WINS_FILE = "wins.jsonl"
EXCERPT_CHARS = 600
# Vendor of platforms without a platforms/*.yaml entry, by name prefix.
_VENDOR_PREFIXES = (("mi", "amd"), ("gfx", "amd"), ("h1", "nvidia"), ("h2", "nvidia"), ("a1", "nvidia"))


def default_wins_dir() -> Path:
    return cache_dir() / "past_wins"


@functools.lru_cache(maxsize=64)
def platform_vendor(platform: str) -> str:
    """Vendor of a platform name: from platforms/*.yaml, else a name-prefix guess, else the name."""
    try:
        return load_platform(platform).vendor
    except (PlatformError, OSError, KeyError):
        pass
    for prefix, vendor in _VENDOR_PREFIXES:
        if platform.lower().startswith(prefix):
            return vendor
    return platform.lower()


def reference_excerpt(reference_source: str, max_chars: int = EXCERPT_CHARS) -> str:
    """The reference `Model` class without comments, docstrings or blank lines, cut to `max_chars`."""
    text = reference_source
    try:
        tree = ast.parse(reference_source)
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == "Model":
                text = ast.get_source_segment(reference_source, node) or reference_source
                break
    except SyntaxError:
        pass
    text = re.sub(r'("""|\'\'\')(.*?)\1', "", text, flags=re.DOTALL)
    lines = [line.split("#", 1)[0].rstrip() for line in text.splitlines()]
    compact = "\n".join(line for line in lines if line.strip())
    return compact[:max_chars]


def summary_text(name: str, tags: Sequence[str], shapes: Sequence[ShapeCase], excerpt: str) -> str:
    """The text a spec (or a win) is embedded as; the same recipe on both sides of the comparison."""
    shape_text = "; ".join(
        f"{s.name}(" + ", ".join(f"{k}={v}" for k, v in sorted(s.params.items())) + ")" for s in shapes
    )
    readable = name.replace("_", " ")
    return f"{readable}. tags: {', '.join(tags) or 'none'}. shapes: {shape_text or 'default'}.\n{excerpt}"


@dataclass(frozen=True)
class PastWin:
    spec_name: str
    spec_key: str
    tags: tuple[str, ...]
    shapes: tuple[ShapeCase, ...]
    platform: str
    backend: str
    source: str  # the winning ModelNew source
    speedup_vs_eager: float
    speedup_vs_compile: float | None = None
    created: str = ""  # ISO-8601 UTC
    reference_excerpt: str = field(default="", compare=False)
    # what the spec's reference computes, sizes left out (specs/structure.py); "" for wins recorded before
    # it was kept, or of a reference that could not be traced: such a win is replayed for no spec
    structure: str = ""

    @property
    def candidate_id(self) -> str:
        return candidate_id(self.source, self.backend)

    @property
    def summary(self) -> str:
        return summary_text(self.spec_name, self.tags, self.shapes, self.reference_excerpt)

    @staticmethod
    def from_spec(
        spec: KernelSpec,
        platform: str,
        backend: str,
        source: str,
        speedup_vs_eager: float,
        speedup_vs_compile: float | None = None,
    ) -> PastWin:
        """A win for `spec`, stamped now; what the engine records after a successful run."""
        return PastWin(
            spec_name=spec.name,
            spec_key=spec.key,
            tags=tuple(spec.tags),
            shapes=tuple(spec.shapes),
            platform=platform,
            backend=backend,
            source=source,
            speedup_vs_eager=float(speedup_vs_eager),
            speedup_vs_compile=None if speedup_vs_compile is None else float(speedup_vs_compile),
            created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            reference_excerpt=reference_excerpt(spec.reference_source),
            structure=spec_structure(spec),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "spec_name": self.spec_name,
            "spec_key": self.spec_key,
            "tags": list(self.tags),
            "shapes": [s.to_json() for s in self.shapes],
            "platform": self.platform,
            "backend": self.backend,
            "source": self.source,
            "speedup_vs_eager": self.speedup_vs_eager,
            "speedup_vs_compile": self.speedup_vs_compile,
            "created": self.created,
            "reference_excerpt": self.reference_excerpt,
            "structure": self.structure,
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> PastWin:
        compile_speedup = data.get("speedup_vs_compile")
        return PastWin(
            spec_name=str(data["spec_name"]),
            spec_key=str(data["spec_key"]),
            tags=tuple(data.get("tags", ())),
            shapes=tuple(ShapeCase.from_json(s) for s in data.get("shapes", ())),
            platform=str(data["platform"]),
            backend=str(data["backend"]),
            source=str(data["source"]),
            speedup_vs_eager=float(data["speedup_vs_eager"]),
            speedup_vs_compile=None if compile_speedup is None else float(compile_speedup),
            created=str(data.get("created", "")),
            reference_excerpt=str(data.get("reference_excerpt", "")),
            structure=str(data.get("structure", "")),
        )


def _encode_vector(vector: np.ndarray) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _decode_vector(text: str) -> np.ndarray | None:
    try:
        return np.frombuffer(base64.b64decode(text, validate=True), dtype="<f4").astype(np.float32)
    except ValueError:  # corrupt base64 or a byte count that is not whole floats: re-embed
        return None


class PastWinStore:
    """Append-only store of past wins with embedding-based lookup."""

    def __init__(
        self,
        directory: str | Path | None = None,
        encoder: Encoder | None = None,
        tag_bonus: float = 0.2,
        same_spec_bonus: float = 1.0,
    ) -> None:
        self.directory = Path(directory) if directory is not None else default_wins_dir()
        self._encoder = encoder
        self.tag_bonus = tag_bonus
        self.same_spec_bonus = same_spec_bonus
        self._lock = threading.Lock()
        self._loaded: tuple[tuple[int, int], list[PastWin], np.ndarray] | None = None
        self._queries: dict[tuple[Any, ...], np.ndarray] = {}

    @property
    def path(self) -> Path:
        return self.directory / WINS_FILE

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            self._encoder = default_encoder()
        return self._encoder

    def add(self, win: PastWin) -> None:
        """Embed the win's summary and append it as one line."""
        if win.speedup_vs_eager <= 0:
            raise ValueError(f"a past win needs a positive speedup, got {win.speedup_vs_eager}")
        vector = self.encoder.encode([win.summary])[0]
        line = json.dumps(
            {"win": win.to_json(), "encoder": self.encoder.name, "embedding": _encode_vector(vector)}
        )
        self.directory.mkdir(parents=True, exist_ok=True)
        with self._lock, self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
            handle.flush()

    def wins(self) -> list[PastWin]:
        """Every stored win, oldest first. Reading needs no encoder."""
        return [win for win, _, _ in self._read_lines()]

    def __len__(self) -> int:
        return len(self._read_lines())

    def _read_lines(self) -> list[tuple[PastWin, str, str]]:
        if not self.path.is_file():
            return []
        entries = []
        for number, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                entries.append((PastWin.from_json(data["win"]), str(data["encoder"]), str(data["embedding"])))
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("%s:%d: skipping unreadable past win (%s)", self.path, number, exc)
        return entries

    def _embedded(self) -> tuple[list[PastWin], np.ndarray]:
        """Wins and their embedding matrix, re-read only when the file changed."""
        stat = self.path.stat()
        signature = (stat.st_size, stat.st_mtime_ns)
        if self._loaded is not None and self._loaded[0] == signature:
            return self._loaded[1], self._loaded[2]
        wins: list[PastWin] = []
        rows: list[np.ndarray] = []
        stale: list[int] = []
        name, dim = self.encoder.name, self.encoder.dim
        for win, encoder_name, embedding in self._read_lines():
            vector = _decode_vector(embedding) if encoder_name == name else None
            if vector is None or vector.shape != (dim,):
                stale.append(len(wins))
                vector = np.zeros(dim, dtype=np.float32)
            wins.append(win)
            rows.append(vector)
        matrix = np.vstack(rows) if rows else np.zeros((0, dim), dtype=np.float32)
        if stale:
            log.info("re-embedding %d past wins recorded with another encoder", len(stale))
            matrix[stale] = self.encoder.encode([wins[i].summary for i in stale])
        self._loaded = (signature, wins, matrix)
        return wins, matrix

    def _query_vector(self, spec: KernelSpec) -> np.ndarray:
        # Operators ask about the same spec over and over during a run; embed it once.
        key = (self.encoder.name, spec.key, spec.name, spec.tags)
        if key not in self._queries:
            text = summary_text(spec.name, spec.tags, spec.shapes, reference_excerpt(spec.reference_source))
            self._queries[key] = self.encoder.encode([text])[0]
        return self._queries[key]

    def scored(
        self, spec: KernelSpec, platform: str, backend: str | None = None, k: int | None = 5
    ) -> list[tuple[PastWin, float]]:
        """Like `similar`, with each win's score (cosine + bonuses); `k=None` ranks every match."""
        if (k is not None and k < 1) or not self.path.is_file():
            return []
        wins, matrix = self._embedded()
        if not wins:
            return []
        limit = len(wins) if k is None else k
        cosine = matrix @ self._query_vector(spec)
        spec_tags = {t.lower() for t in spec.tags}
        vendor = platform_vendor(platform)
        exact: list[tuple[PastWin, float]] = []
        same_vendor: list[tuple[PastWin, float]] = []
        for win, cos in zip(wins, cosine, strict=True):
            if backend is not None and win.backend != backend:
                continue
            if win.platform == platform:
                bucket = exact
            elif platform_vendor(win.platform) == vendor:
                bucket = same_vendor
            else:
                continue
            win_tags = {t.lower() for t in win.tags}
            union = spec_tags | win_tags
            score = float(cos) + (self.tag_bonus * len(spec_tags & win_tags) / len(union) if union else 0.0)
            if win.spec_key == spec.key:
                score += self.same_spec_bonus
            bucket.append((win, score))
        ranked: list[tuple[PastWin, float]] = []
        seen: set[str] = set()
        for bucket in (exact, same_vendor):
            for win, score in sorted(bucket, key=lambda item: (-item[1], -item[0].speedup_vs_eager)):
                if win.candidate_id not in seen and len(ranked) < limit:
                    seen.add(win.candidate_id)
                    ranked.append((win, score))
        return ranked

    def similar(
        self, spec: KernelSpec, platform: str, backend: str | None = None, k: int = 5
    ) -> list[PastWin]:
        """Up to `k` wins most like `spec` on `platform` (same-vendor fallback), best first."""
        return [win for win, _ in self.scored(spec, platform, backend, k)]
