"""The search graph: candidates as nodes, variations as edges, checkpointed as append-only JSONL.

Every change is one JSON line, written with flush + fsync before the call returns, so a killed run
loses nothing it had recorded. Line kinds:

    {"type": "candidate", ...Candidate.to_json()}
    {"type": "report", "id": ..., "report": EvalReport.to_json(), "fitness": FitnessValue.to_json()}
    {"type": "event", "kind": ..., "payload": {...}}

`SearchGraph.load` replays the file (a torn last line, from a kill mid-write, is dropped and cut off
the file) and keeps appending to it. A fresh `SearchGraph(path)` refuses a non-empty file so two
runs never interleave in one checkpoint; resume with `load`.
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import networkx as nx

from kernelevolve.types import Baseline, Candidate, EvalReport, FitnessValue

log = logging.getLogger(__name__)

PENDING = "pending"  # status shown for nodes without a report


@dataclass(frozen=True)
class Node:
    """One candidate and, once evaluated, its report and fitness."""

    candidate: Candidate
    report: EvalReport | None
    fitness: FitnessValue | None
    order: int  # insertion index

    @property
    def id(self) -> str:
        return self.candidate.id

    @property
    def evaluated(self) -> bool:
        return self.report is not None

    @property
    def feasible(self) -> bool:
        return self.fitness is not None and self.fitness.feasible

    @property
    def status(self) -> str:
        return self.report.status.value if self.report is not None else PENDING


def _rank(node: Node) -> tuple[FitnessValue, int]:
    # Higher fitness first; among equal fitness the earlier node wins (stable "best").
    assert node.fitness is not None
    return (node.fitness, -node.order)


class SearchGraph:
    """Candidates and their lineage on a `networkx.DiGraph` (edges parent -> child)."""

    def __init__(self, checkpoint: pathlib.Path | None = None) -> None:
        self.digraph: nx.DiGraph = nx.DiGraph()
        self._order: list[str] = []
        self._events: list[dict[str, Any]] = []
        self._depth: dict[str, int] = {}
        self._reported: dict[str, None] = {}  # ids in the order of their first report: evaluation order
        self._revision = 0  # records kept so far (candidates, reports, events): the same after a reload
        self._lock = threading.RLock()
        self.checkpoint = pathlib.Path(checkpoint) if checkpoint is not None else None
        if self.checkpoint is not None:
            if self.checkpoint.exists() and self.checkpoint.stat().st_size > 0:
                raise FileExistsError(
                    f"checkpoint {self.checkpoint} already holds a run; resume it with SearchGraph.load"
                )
            self.checkpoint.parent.mkdir(parents=True, exist_ok=True)
            self.checkpoint.touch()

    # -- mutation -------------------------------------------------------------------------------

    def add_candidate(self, candidate: Candidate) -> bool:
        """Add a node (and edges from those of its parents already here); False if the id exists."""
        with self._lock:
            if not self._add(candidate):
                return False
            self._append({"type": "candidate", **candidate.to_json()})
            return True

    def record(self, candidate_id: str, report: EvalReport, fitness: FitnessValue) -> None:
        """Attach a report and fitness (a later record, e.g. after re-verification, replaces it)."""
        with self._lock:
            self._record(candidate_id, report, fitness)
            self._append(
                {
                    "type": "report",
                    "id": candidate_id,
                    "report": report.to_json(),
                    "fitness": fitness.to_json(),
                }
            )

    def record_event(self, kind: str, payload: dict[str, Any]) -> None:
        """Store a run-level fact (baselines, config, termination reason...) in the checkpoint."""
        # Round-trip through JSON now: a payload that cannot be saved fails here, and what is kept in
        # memory is exactly what a reload will see.
        clean = json.loads(json.dumps(payload))
        with self._lock:
            self._events.append({"kind": kind, "payload": clean})
            self._revision += 1
            self._append({"type": "event", "kind": kind, "payload": clean})

    def _add(self, candidate: Candidate) -> bool:
        cid = candidate.id
        if cid in self.digraph:
            return False
        node = Node(candidate=candidate, report=None, fitness=None, order=len(self._order))
        self.digraph.add_node(cid, node=node)
        self._revision += 1
        self._order.append(cid)
        # Parents are normally already in the graph (they were selected from it). An unknown parent
        # id (e.g. a past win from another run) gets no edge; the id stays in candidate.parent_ids.
        for pid in candidate.parent_ids:
            if pid in self.digraph and pid != cid:
                self.digraph.add_edge(pid, cid, operator=candidate.operator, mode=candidate.mode)
            else:
                log.debug("candidate %s: parent %s is not in the graph", cid, pid)
        # Edges only ever point at a new node, so a node's depth never changes once known.
        preds = list(self.digraph.predecessors(cid))
        self._depth[cid] = 1 + max(self._depth[p] for p in preds) if preds else 0
        return True

    def _record(self, candidate_id: str, report: EvalReport, fitness: FitnessValue) -> None:
        if candidate_id not in self.digraph:
            raise KeyError(f"no candidate {candidate_id!r} in the graph")
        if report.candidate_id != candidate_id:
            raise ValueError(f"report is for {report.candidate_id!r}, not {candidate_id!r}")
        old: Node = self.digraph.nodes[candidate_id]["node"]
        self.digraph.nodes[candidate_id]["node"] = Node(old.candidate, report, fitness, old.order)
        self._reported.setdefault(candidate_id, None)
        self._revision += 1

    def _append(self, record: dict[str, Any]) -> None:
        if self.checkpoint is None:
            return
        line = json.dumps(record, separators=(",", ":")) + "\n"
        with open(self.checkpoint, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    # -- queries --------------------------------------------------------------------------------

    def __contains__(self, candidate_id: object) -> bool:
        return candidate_id in self.digraph

    def __len__(self) -> int:
        return len(self._order)

    @property
    def revision(self) -> int:
        """How many records the graph holds (candidates, reports, events); a reloaded checkpoint has the
        revision it had when written, so decisions seeded by it repeat on a resume."""
        return self._revision

    def node(self, candidate_id: str) -> Node:
        try:
            node: Node = self.digraph.nodes[candidate_id]["node"]
        except KeyError:
            raise KeyError(f"no candidate {candidate_id!r} in the graph") from None
        return node

    def nodes(self) -> list[Node]:
        return [self.digraph.nodes[cid]["node"] for cid in self._order]

    def evaluated(self) -> list[Node]:
        return [n for n in self.nodes() if n.evaluated]

    def evaluated_in_order(self) -> list[Node]:
        """Evaluated nodes in the order their first reports were recorded (completion order, which
        concurrent evaluation makes differ from the order candidates were added)."""
        return [self.digraph.nodes[cid]["node"] for cid in self._reported]

    def feasible(self) -> list[Node]:
        return [n for n in self.nodes() if n.evaluated and n.feasible]

    def pending(self) -> list[Node]:
        return [n for n in self.nodes() if not n.evaluated]

    def best(self) -> Node | None:
        return self.best_where(lambda node: True)

    def best_where(self, accepts: Callable[[Node], bool]) -> Node | None:
        """The best feasible node that `accepts` takes (ties broken as `top` orders them)."""
        return max((n for n in self.feasible() if accepts(n)), key=_rank, default=None)

    def top(self, k: int) -> list[Node]:
        return sorted(self.feasible(), key=_rank, reverse=True)[: max(k, 0)]

    def parents(self, candidate_id: str) -> list[str]:
        """Parents present in the graph, in the candidate's parent order."""
        node = self.node(candidate_id)
        seen: dict[str, None] = {}
        for pid in node.candidate.parent_ids:
            if pid in self.digraph and pid != candidate_id:
                seen.setdefault(pid, None)
        return list(seen)

    def children(self, candidate_id: str) -> list[str]:
        """Children in insertion order."""
        self.node(candidate_id)
        return sorted(self.digraph.successors(candidate_id), key=lambda c: self.node(c).order)

    def depth(self, candidate_id: str) -> int:
        """Generations from a seed: 0 for a node without parents here, else 1 + deepest parent."""
        self.node(candidate_id)
        return self._depth[candidate_id]

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        """Recorded events as {"kind", "payload"} dicts, oldest first, optionally of one kind."""
        return [dict(e) for e in self._events if kind is None or e["kind"] == kind]

    def recorded_baselines(self) -> dict[str, Baseline] | None:
        """The run's baselines per shape, from the newest readable "baselines" event the engine recorded
        before seeding; None where there is none yet."""
        for event in reversed(self.events("baselines")):
            shapes = event.get("payload", event).get("shapes")
            if shapes:
                try:
                    return {k: Baseline.from_json(v) for k, v in shapes.items()}
                except (KeyError, TypeError, ValueError):
                    log.debug("unreadable baselines event", exc_info=True)
        return None

    def stats(self) -> dict[str, Any]:
        nodes = self.nodes()
        return {
            "total": len(nodes),
            "evaluated": sum(n.evaluated for n in nodes),
            "feasible": sum(n.feasible for n in nodes),
            "by_status": dict(Counter(n.status for n in nodes)),
            "by_operator": dict(Counter(n.candidate.operator for n in nodes)),
        }

    def export(self) -> dict[str, Any]:
        """JSON-able nodes and edges for plotting and reports."""
        nodes = []
        for n in self.nodes():
            nodes.append(
                {
                    "id": n.id,
                    "order": n.order,
                    "operator": n.candidate.operator,
                    "mode": n.candidate.mode,
                    "backend": n.candidate.backend,
                    "status": n.status,
                    "feasible": n.feasible,
                    "objective": n.fitness.objective if n.fitness is not None else None,
                    "speedup_vs_compile": n.fitness.speedup_vs_compile if n.fitness is not None else None,
                    "depth": self.depth(n.id),
                }
            )
        edges = [
            {"source": u, "target": v, "operator": data.get("operator"), "mode": data.get("mode")}
            for u, v, data in sorted(self.digraph.edges(data=True), key=lambda e: self._edge_key(e[0], e[1]))
        ]
        return {"nodes": nodes, "edges": edges}

    def _edge_key(self, u: str, v: str) -> tuple[int, int]:
        return (self.node(v).order, self.node(u).order)

    # -- persistence ----------------------------------------------------------------------------

    @classmethod
    def load(cls, checkpoint: pathlib.Path) -> SearchGraph:
        """Rebuild a graph from its checkpoint; later changes append to the same file."""
        path = pathlib.Path(checkpoint)
        raw = path.read_bytes()
        lines = raw.split(b"\n")
        # The last element is b"" when the file ends with a newline; otherwise it is a line whose
        # write may have been cut short by a kill.
        tail = lines.pop()
        records: list[dict[str, Any]] = []
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: corrupt checkpoint line ({exc})") from None
        good_end = len(raw) - len(tail)
        if tail.strip():
            try:
                records.append(json.loads(tail))
                with open(path, "ab") as fh:  # complete but unterminated: finish the line
                    fh.write(b"\n")
                    fh.flush()
                    os.fsync(fh.fileno())
            except json.JSONDecodeError:
                log.warning("%s: dropping a torn last line (%d bytes)", path, len(tail))
                os.truncate(path, good_end)

        graph = cls()
        for lineno, record in enumerate(records, start=1):
            graph._replay(record, path, lineno)
        graph.checkpoint = path
        return graph

    def _replay(self, record: dict[str, Any], path: pathlib.Path, lineno: int) -> None:
        kind = record.get("type")
        if kind == "candidate":
            candidate = Candidate.from_json(record)
            if record.get("id") not in (None, candidate.id):
                raise ValueError(f"{path}: record {lineno}: candidate id does not match its source")
            self._add(candidate)
        elif kind == "report":
            self._record(
                record["id"],
                EvalReport.from_json(record["report"]),
                FitnessValue.from_json(record["fitness"]),
            )
        elif kind == "event":
            self._events.append({"kind": record["kind"], "payload": record.get("payload", {})})
            self._revision += 1
        else:
            log.warning("%s: record %d has unknown type %r; skipped", path, lineno, kind)


def own_kernels_only(node: Node) -> bool:
    """Whether the node's source passes the strict static checks (does all its work in our kernels)."""
    from kernelevolve.eval.own_kernels import kernel_use

    return kernel_use(node.candidate).own_kernels_only


def best_strict(graph: SearchGraph) -> Node | None:
    """The best feasible node whose source passes the strict static checks (own kernels only)."""
    return graph.best_where(own_kernels_only)
