"""The search graph laid out for the report's SVG: candidates in rows by depth (seeds on top), each
row ordered under its parents, edges labelled with the operator that made the child, nodes labelled
with their id and speedup (or status) and coloured by status. Positions only; the template draws it and
the report's script pans, zooms and shows a node's details on hover."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from kernelevolve.results.format import format_speedup

STATUS_COLOURS = {
    "ok": "#2ca02c",
    "incorrect": "#d62728",
    "runtime_error": "#ff7f0e",
    "compile_error": "#9467bd",
    "rejected_static": "#8c564b",
    "timeout": "#e377c2",
    "worker_crash": "#7f7f7f",
    "compiled_only": "#bcbd22",
    "pending": "#c7c7c7",
}
OTHER_COLOUR = "#17becf"
NODE_W, NODE_H = 118, 40
GAP_X, GAP_Y = 26, 70
MARGIN = 20
MIN_W, MIN_H = 1000, 440  # a small graph is drawn at its size in a view this large, not blown up


def layout(export: Mapping[str, Any], best_id: str | None = None) -> dict[str, Any]:
    """{width, height, nodes: [...], edges: [...], legend: [(status, colour)]} for graph_export.json's data."""
    nodes = {str(n["id"]): dict(n) for n in export.get("nodes") or []}
    edges = [e for e in export.get("edges") or [] if e.get("source") in nodes and e.get("target") in nodes]
    parents: dict[str, list[str]] = defaultdict(list)
    for edge in edges:
        parents[edge["target"]].append(edge["source"])
    rows: dict[int, list[str]] = defaultdict(list)
    for node_id, node in sorted(nodes.items(), key=lambda kv: kv[1].get("order", 0)):
        rows[int(node.get("depth") or 0)].append(node_id)
    column: dict[str, float] = {}
    for depth in sorted(rows):
        # under the parents' mean column (barycentre), ties in evaluation order
        def where(node_id: str) -> tuple[float, int]:
            known = [column[p] for p in parents[node_id] if p in column]
            return (sum(known) / len(known) if known else float("inf"), int(nodes[node_id].get("order", 0)))

        rows[depth].sort(key=where)
        for index, node_id in enumerate(rows[depth]):
            column[node_id] = index
    widest = max((len(r) for r in rows.values()), default=0)
    drawn_w = 2 * MARGIN + max(widest * (NODE_W + GAP_X) - GAP_X, NODE_W)
    drawn_h = 2 * MARGIN + (max(rows, default=0) + 1) * (NODE_H + GAP_Y) - GAP_Y
    width, height = max(drawn_w, MIN_W), max(drawn_h, MIN_H)
    shift = (width - drawn_w) / 2
    placed = []
    centre: dict[str, tuple[float, float]] = {}
    for depth, row in rows.items():
        offset = (widest - len(row)) * (NODE_W + GAP_X) / 2
        for index, node_id in enumerate(row):
            node = nodes[node_id]
            x = shift + MARGIN + offset + index * (NODE_W + GAP_X)
            y = MARGIN + depth * (NODE_H + GAP_Y)
            centre[node_id] = (x + NODE_W / 2, y + NODE_H / 2)
            status = str(node.get("status") or "pending")
            speedup = node.get("objective") if node.get("feasible") else None
            placed.append(
                {
                    "id": node_id,
                    "x": x,
                    "y": y,
                    "label": node_id[:8],
                    "detail": format_speedup(speedup) if speedup is not None else status,
                    "status": status,
                    "colour": STATUS_COLOURS.get(status, OTHER_COLOUR),
                    "best": node_id == best_id,
                    "operator": node.get("operator", ""),
                    "mode": node.get("mode", ""),
                    "backend": node.get("backend", ""),
                    "speedup_vs_eager": speedup,
                    "speedup_vs_compile": node.get("speedup_vs_compile"),
                    "order": node.get("order"),
                    "depth": depth,
                }
            )
    drawn = []
    for edge in edges:
        (x1, y1), (x2, y2) = centre[edge["source"]], centre[edge["target"]]
        drawn.append(
            {
                "x1": x1,
                "y1": y1 + NODE_H / 2,
                "x2": x2,
                "y2": y2 - NODE_H / 2,
                "label": edge.get("operator", ""),
                "lx": (x1 + x2) / 2,
                "ly": (y1 + y2) / 2 + 4,
            }
        )
    seen = sorted({n["status"] for n in placed})
    return {
        "width": width,
        "height": height,
        "node_w": NODE_W,
        "node_h": NODE_H,
        "nodes": placed,
        "edges": drawn,
        "legend": [(s, STATUS_COLOURS.get(s, OTHER_COLOUR)) for s in seen],
    }
