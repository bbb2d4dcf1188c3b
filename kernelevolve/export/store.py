"""An artifact store of winning kernels (SQLite, stdlib `sqlite3`), for build pipelines to look up.

One row per (spec key, platform, backend, shape). `shape` is a shape name of the spec, holding the
fastest correct kernel at that shape, or `ALL_SHAPES` ("*"), holding the run's overall best (highest
geomean speedup over all shapes). A row keeps the kernel source, its speedups and timings, the full
spec (so a consumer can rebuild the reference and a custom op without the run directory) and
provenance: run directory, candidate id, date. Adding a row keeps the faster of the old and the new
kernel unless `force` is given.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kernelevolve.types import KernelSpec, ShapeCase

ALL_SHAPES = "*"
DEFAULT_STORE_NAME = "artifacts.sqlite"
_KEY_LENGTH = 16

_SCHEMA = """
CREATE TABLE IF NOT EXISTS artifacts (
    spec_key TEXT NOT NULL,
    spec_name TEXT NOT NULL,
    platform TEXT NOT NULL,
    backend TEXT NOT NULL,
    shape TEXT NOT NULL,
    shape_params TEXT NOT NULL,
    source TEXT NOT NULL,
    candidate_id TEXT NOT NULL,
    speedup_vs_eager REAL,
    speedup_vs_compile REAL,
    kernel_ms REAL,
    eager_ms REAL,
    compile_ms REAL,
    run_dir TEXT NOT NULL,
    created TEXT NOT NULL,
    spec_json TEXT NOT NULL,
    PRIMARY KEY (spec_key, platform, backend, shape)
);
CREATE INDEX IF NOT EXISTS artifacts_by_name ON artifacts (spec_name, platform);
"""
_COLUMNS = (
    "spec_key",
    "spec_name",
    "platform",
    "backend",
    "shape",
    "shape_params",
    "source",
    "candidate_id",
    "speedup_vs_eager",
    "speedup_vs_compile",
    "kernel_ms",
    "eager_ms",
    "compile_ms",
    "run_dir",
    "created",
    "spec_json",
)


class StoreError(ValueError):
    """A run directory or a query the store cannot use; the message says why."""


@dataclass(frozen=True)
class Artifact:
    """A winning kernel for one spec on one platform, at one shape (or at all of them: `ALL_SHAPES`)."""

    spec_key: str
    spec_name: str
    platform: str
    backend: str
    shape: str
    source: str
    candidate_id: str
    spec: KernelSpec = field(repr=False)
    shape_params: dict[str, Any] = field(default_factory=dict)
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    kernel_ms: float | None = None
    eager_ms: float | None = None
    compile_ms: float | None = None
    run_dir: str = ""
    created: str = ""

    @property
    def all_shapes(self) -> bool:
        return self.shape == ALL_SHAPES

    def summary(self) -> dict[str, Any]:
        """Everything but the source and the spec, JSON-able (for listings)."""
        data = asdict(self)
        data.pop("source")
        data.pop("spec")
        return data


def default_store_path() -> Path:
    from kernelevolve.paths import cache_dir

    return cache_dir() / DEFAULT_STORE_NAME


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# ------------------------------------------------------------------------------------------ runs


def artifacts_from_run(run_dir: Path | str) -> list[Artifact]:
    """The run's overall best (shape "*") and the fastest correct kernel at each of its shapes."""
    from kernelevolve.search.graph import SearchGraph

    run = Path(run_dir)
    for name in ("spec.json", "results.json", "graph.jsonl"):
        if not (run / name).is_file():
            raise StoreError(f"{run}: not a finished kernelevolve run directory (no {name})")
    spec = KernelSpec.from_json(json.loads((run / "spec.json").read_text()))
    results = json.loads((run / "results.json").read_text())
    graph = SearchGraph.load(run / "graph.jsonl")
    # The winner the run reported (after its confirmation), not the search's own ranking: the two differ
    # where a confirmation reorders close contenders
    reported = (results.get("best") or {}).get("id")
    best = graph.node(str(reported)) if reported in graph else graph.best()
    if best is None or best.fitness is None:
        return []
    baselines = results.get("baselines") or {}
    platform = str(results["platform"])
    created = _now()

    def artifact(node: Any, shape: str, params: dict[str, Any], **timing: float | None) -> Artifact:
        return Artifact(
            spec_key=spec.key,
            spec_name=spec.name,
            platform=platform,
            backend=node.candidate.backend,
            shape=shape,
            source=node.candidate.source,
            candidate_id=node.id,
            spec=spec,
            shape_params=params,
            run_dir=str(run.resolve()),
            created=created,
            **timing,
        )

    out = [
        artifact(
            best,
            ALL_SHAPES,
            {},
            speedup_vs_eager=(results.get("best") or {}).get("speedup_vs_eager") or best.fitness.objective,
            speedup_vs_compile=best.fitness.speedup_vs_compile,
        )
    ]
    for shape in spec.shapes:
        timed = [
            (n.report.latency[shape.name].median_ms, n.order, n)
            for n in graph.feasible()
            if n.report is not None and shape.name in n.report.latency
        ]
        if not timed:
            continue
        # Every feasible node passed correctness at every shape, so any of them may serve this one.
        kernel_ms, _, fastest = min(timed, key=lambda t: (t[0], t[1]))
        base = baselines.get(shape.name) or {}
        eager_ms = (base.get("eager") or {}).get("median_ms")
        compile_ms = (base.get("compiled") or {}).get("median_ms")
        out.append(
            artifact(
                fastest,
                shape.name,
                dict(shape.params),
                kernel_ms=kernel_ms,
                eager_ms=eager_ms,
                compile_ms=compile_ms,
                speedup_vs_eager=eager_ms / kernel_ms if eager_ms and kernel_ms else None,
                speedup_vs_compile=compile_ms / kernel_ms if compile_ms and kernel_ms else None,
            )
        )
    return out


# ------------------------------------------------------------------------------------------ store


def _row_to_artifact(row: sqlite3.Row) -> Artifact:
    data = {k: row[k] for k in _COLUMNS}
    spec = KernelSpec.from_json(json.loads(data.pop("spec_json")))
    data["shape_params"] = json.loads(data["shape_params"])
    return Artifact(spec=spec, **data)


def _artifact_row(artifact: Artifact) -> tuple[Any, ...]:
    data = asdict(artifact)
    data["spec_json"] = json.dumps(artifact.spec.to_json())
    data["shape_params"] = json.dumps(artifact.shape_params, sort_keys=True)
    data["created"] = artifact.created or _now()
    return tuple(data[k] for k in _COLUMNS)


def _better(new: Artifact, old: Artifact) -> bool:
    """Higher speedup vs eager wins; a kernel with a measured speedup beats one without."""
    if old.speedup_vs_eager is None:
        return True
    return new.speedup_vs_eager is not None and new.speedup_vs_eager > old.speedup_vs_eager


class ArtifactStore:
    """Winning kernels in one SQLite file (created on first use)."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.executescript(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30.0)
        db.row_factory = sqlite3.Row
        try:
            with db:  # one transaction: committed on success, rolled back on error
                yield db
        finally:
            db.close()

    def add(self, artifact: Artifact, *, force: bool = False) -> bool:
        """Store `artifact` unless a faster kernel is already there (or always, with `force`)."""
        with self._connect() as db:
            row = db.execute(
                "SELECT * FROM artifacts WHERE spec_key=? AND platform=? AND backend=? AND shape=?",
                (artifact.spec_key, artifact.platform, artifact.backend, artifact.shape),
            ).fetchone()
            if row is not None and not force and not _better(artifact, _row_to_artifact(row)):
                return False
            marks = ", ".join("?" for _ in _COLUMNS)
            db.execute(
                f"INSERT OR REPLACE INTO artifacts ({', '.join(_COLUMNS)}) VALUES ({marks})",
                _artifact_row(artifact),
            )
            return True

    def add_run(self, run_dir: Path | str, *, force: bool = False) -> list[Artifact]:
        """Add a run's winners; returns those that went in."""
        return [a for a in artifacts_from_run(run_dir) if self.add(a, force=force)]

    def find(
        self, spec: KernelSpec | str | None = None, platform: str | None = None, shape: str | None = None
    ) -> list[Artifact]:
        """Rows matching the filters, newest first (`spec`: a KernelSpec, a spec key or a spec name)."""
        clauses, args = [], []
        if spec is not None:
            keys = self._spec_keys(spec, platform)
            if not keys:
                return []
            clauses.append(f"spec_key IN ({', '.join('?' for _ in keys)})")
            args += keys
        if platform is not None:
            clauses.append("platform=?")
            args.append(platform)
        if shape is not None:
            clauses.append("shape=?")
            args.append(shape)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        with self._connect() as db:
            rows = db.execute(
                f"SELECT * FROM artifacts {where} ORDER BY created DESC, spec_name, shape", args
            ).fetchall()
        return [_row_to_artifact(r) for r in rows]

    def _spec_keys(self, spec: KernelSpec | str, platform: str | None) -> list[str]:
        if isinstance(spec, KernelSpec):
            return [spec.key]
        with self._connect() as db:
            if (
                len(spec) == _KEY_LENGTH
                and db.execute("SELECT 1 FROM artifacts WHERE spec_key=? LIMIT 1", (spec,)).fetchone()
            ):
                return [spec]
            query = "SELECT spec_key, MAX(created) AS newest FROM artifacts WHERE spec_name=?"
            args: list[Any] = [spec]
            if platform is not None:
                query += " AND platform=?"
                args.append(platform)
            rows = db.execute(query + " GROUP BY spec_key ORDER BY newest DESC", args).fetchall()
        return [r["spec_key"] for r in rows]

    def resolve_key(self, spec: KernelSpec | str, platform: str | None = None) -> str | None:
        """The spec key `spec` names here; for a name with several keys (other shapes), the newest."""
        keys = self._spec_keys(spec, platform)
        return keys[0] if keys else None

    def lookup(
        self,
        spec: KernelSpec | str,
        platform: str,
        shape: str | ShapeCase | None = None,
        backend: str | None = None,
    ) -> Artifact | None:
        """The best kernel for `spec` on `platform`: at `shape`, or overall when `shape` is None."""
        key = self.resolve_key(spec, platform)
        if key is None:
            return None
        shape_name = ALL_SHAPES if shape is None else shape.name if isinstance(shape, ShapeCase) else shape
        rows = [a for a in self.find(key, platform, shape_name) if backend is None or a.backend == backend]
        if not rows:
            return None
        return max(rows, key=lambda a: (a.speedup_vs_eager or 0.0, a.created))

    def shape_kernels(self, spec: KernelSpec | str, platform: str) -> dict[str, Artifact]:
        """Shape name -> best per-shape artifact (any backend) for one spec on one platform."""
        key = self.resolve_key(spec, platform)
        out: dict[str, Artifact] = {}
        for artifact in self.find(key, platform) if key else []:
            if artifact.all_shapes:
                continue
            held = out.get(artifact.shape)
            if held is None or _better(artifact, held):
                out[artifact.shape] = artifact
        return out


def lookup(
    spec_or_key: KernelSpec | str,
    platform: str,
    shape: str | ShapeCase | None = None,
    *,
    store: ArtifactStore | Path | str | None = None,
    backend: str | None = None,
) -> Artifact | None:
    """For build pipelines: the stored winner for a spec (object, key or name) on a platform, or None."""
    db = store if isinstance(store, ArtifactStore) else ArtifactStore(store)
    return db.lookup(spec_or_key, platform, shape, backend)
