from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import kernelevolve
from kernelevolve.search.graph import SearchGraph
from kernelevolve.types import Candidate, EvalReport, FitnessValue, Status, TimingStats


def cand(tag: str, *parents: Candidate, operator: str = "seed", mode: str = "seed") -> Candidate:
    return Candidate(
        source=f"# {tag}\nclass ModelNew:\n    pass\n",
        backend="triton",
        operator=operator,
        mode=mode,
        parent_ids=tuple(p.id for p in parents),
        metadata={"tag": tag},
    )


def report(c: Candidate, status: Status = Status.OK, ms: float = 1.0) -> EvalReport:
    latency = {"s": TimingStats.from_samples([ms], "wall")} if status is Status.OK else {}
    return EvalReport(candidate_id=c.id, status=status, latency=latency, feedback="fb")


def ok(objective: float) -> FitnessValue:
    return FitnessValue(True, objective, objective / 2)


BAD = FitnessValue(False, 0.0)


def build(graph: SearchGraph) -> dict[str, Candidate]:
    """a, b seeds; c = tune(a); d = combine(c, b); e pending child of d; f a failed child of a."""
    a, b = cand("a"), cand("b")
    c = cand("c", a, operator="tune", mode="tune")
    d = cand("d", c, b, operator="llm", mode="combine")
    e = cand("e", d, operator="llm", mode="improve")
    f = cand("f", a, operator="llm", mode="improve")
    for x in (a, b, c, d, e, f):
        assert graph.add_candidate(x)
    graph.record(a.id, report(a, ms=2.0), ok(1.0))
    graph.record(b.id, report(b, ms=1.0), ok(2.0))
    graph.record(c.id, report(c, ms=0.8), ok(2.5))
    graph.record(d.id, report(d, ms=0.5), ok(4.0))
    graph.record(f.id, report(f, Status.COMPILE_ERROR), BAD)
    return {"a": a, "b": b, "c": c, "d": d, "e": e, "f": f}


def test_add_record_queries() -> None:
    g = SearchGraph()
    cs = build(g)
    assert len(g) == 6
    assert cs["a"].id in g and "nope" not in g
    assert not g.add_candidate(cand("a"))  # same source, same id
    assert len(g) == 6
    assert [n.id for n in g.nodes()] == [cs[k].id for k in "abcdef"]
    assert [n.order for n in g.nodes()] == list(range(6))
    assert [n.id for n in g.pending()] == [cs["e"].id]
    assert [n.id for n in g.evaluated()] == [cs[k].id for k in "abcdf"]
    assert [n.id for n in g.feasible()] == [cs[k].id for k in "abcd"]
    best = g.best()
    assert best is not None and best.id == cs["d"].id
    assert [n.id for n in g.top(3)] == [cs[k].id for k in "dcb"]
    assert len(g.top(100)) == 4 and g.top(0) == []
    assert g.parents(cs["d"].id) == [cs["c"].id, cs["b"].id]
    assert g.children(cs["a"].id) == [cs["c"].id, cs["f"].id]
    assert [g.depth(cs[k].id) for k in "abcdef"] == [0, 0, 1, 2, 3, 1]
    edge = g.digraph.edges[cs["c"].id, cs["d"].id]
    assert edge == {"operator": "llm", "mode": "combine"}
    node_f = g.node(cs["f"].id)
    assert node_f.evaluated and not node_f.feasible and node_f.status == "compile_error"


def test_best_ties_go_to_the_earliest_and_infeasible_never_wins() -> None:
    g = SearchGraph()
    x, y, z = cand("x"), cand("y"), cand("z")
    for c in (x, y, z):
        g.add_candidate(c)
    assert g.best() is None
    g.record(x.id, report(x, Status.INCORRECT), FitnessValue(False, 99.0))
    assert g.best() is None and g.top(2) == []
    g.record(y.id, report(y), ok(1.5))
    g.record(z.id, report(z), ok(1.5))
    best = g.best()
    assert best is not None and best.id == y.id


def test_record_errors() -> None:
    g = SearchGraph()
    a, b = cand("a"), cand("b")
    g.add_candidate(a)
    with pytest.raises(KeyError, match="no candidate"):
        g.record(b.id, report(b), ok(1.0))
    with pytest.raises(ValueError, match="report is for"):
        g.record(a.id, report(b), ok(1.0))
    with pytest.raises(KeyError):
        g.node(b.id)


def test_unknown_parent_gets_no_edge() -> None:
    g = SearchGraph()
    orphan = Candidate("x = 1\n", "triton", "replay", "replay", parent_ids=("0" * 16,))
    assert g.add_candidate(orphan)
    assert g.parents(orphan.id) == [] and g.depth(orphan.id) == 0
    assert g.digraph.number_of_edges() == 0


def test_checkpoint_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "run" / "graph.jsonl"
    g = SearchGraph(path)
    cs = build(g)
    g.record_event("baselines", {"s": {"eager_ms": 2.0}})
    g.record_event("note", {"text": "hello"})
    lines = path.read_text().splitlines()
    assert len(lines) == 6 + 5 + 2
    assert [json.loads(line)["type"] for line in lines[:7]] == ["candidate"] * 6 + ["report"]

    loaded = SearchGraph.load(path)
    assert loaded.export() == g.export()
    assert loaded.events() == g.events()
    assert loaded.events("note") == [{"kind": "note", "payload": {"text": "hello"}}]
    for n in g.nodes():
        m = loaded.node(n.id)
        assert (m.candidate, m.report, m.fitness, m.order) == (n.candidate, n.report, n.fitness, n.order)
    best = loaded.best()
    assert best is not None and best.id == cs["d"].id

    # The loaded graph keeps appending to the same file.
    g2 = cand("g", cs["d"], operator="tune", mode="tune")
    assert loaded.add_candidate(g2)
    loaded.record(cs["e"].id, report(cs["e"], ms=0.25), ok(8.0))
    again = SearchGraph.load(path)
    assert len(again) == 7
    best = again.best()
    assert best is not None and best.id == cs["e"].id
    assert again.depth(g2.id) == 3


def test_evaluation_order_is_report_order_and_survives_a_reload(tmp_path: Path) -> None:
    path = tmp_path / "graph.jsonl"
    g = SearchGraph(path)
    a, b, c = cand("a"), cand("b"), cand("c")
    for x in (a, b, c):
        g.add_candidate(x)
    g.record(c.id, report(c), ok(1.0))  # reports come back in completion order, not insertion order
    g.record(a.id, report(a, Status.INCORRECT), BAD)
    g.record(c.id, report(c, ms=0.5), ok(2.0))  # a later report (re-verification) keeps its place
    assert [n.id for n in g.evaluated_in_order()] == [c.id, a.id]
    assert [n.id for n in g.evaluated()] == [a.id, c.id]
    assert g.evaluated_in_order()[0].report == report(c, ms=0.5)
    loaded = SearchGraph.load(path)
    assert [n.id for n in loaded.evaluated_in_order()] == [c.id, a.id]
    loaded.record(b.id, report(b), ok(1.5))
    assert [n.id for n in loaded.evaluated_in_order()] == [c.id, a.id, b.id]


def test_fresh_graph_refuses_a_used_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "graph.jsonl"
    g = SearchGraph(path)
    g.add_candidate(cand("a"))
    with pytest.raises(FileExistsError, match="SearchGraph.load"):
        SearchGraph(path)


def test_event_payload_must_be_json(tmp_path: Path) -> None:
    g = SearchGraph(tmp_path / "graph.jsonl")
    with pytest.raises(TypeError):
        g.record_event("bad", {"x": object()})
    assert g.events() == [] and (tmp_path / "graph.jsonl").read_text() == ""


def test_torn_last_line_is_dropped_and_cut(tmp_path: Path) -> None:
    path = tmp_path / "graph.jsonl"
    g = SearchGraph(path)
    cs = build(g)
    intact = path.read_bytes()
    extra = cand("torn")
    with open(path, "ab") as fh:  # a kill in the middle of a write
        fh.write(json.dumps({"type": "candidate", **extra.to_json()}).encode()[:40])
    loaded = SearchGraph.load(path)
    assert len(loaded) == 6 and extra.id not in loaded
    assert path.read_bytes() == intact  # the fragment is gone, so appends start on a clean line
    loaded.record(cs["e"].id, report(cs["e"]), ok(3.0))
    again = SearchGraph.load(path)
    assert again.node(cs["e"].id).fitness == ok(3.0)


def test_complete_but_unterminated_last_line_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "graph.jsonl"
    g = SearchGraph(path)
    build(g)
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    loaded = SearchGraph.load(path)
    assert loaded.export() == g.export()
    loaded.add_candidate(cand("z"))
    assert len(SearchGraph.load(path)) == 7


def test_corrupt_middle_line_raises(tmp_path: Path) -> None:
    path = tmp_path / "graph.jsonl"
    g = SearchGraph(path)
    build(g)
    lines = path.read_text().splitlines(keepends=True)
    lines[2] = "{not json\n"
    path.write_text("".join(lines))
    with pytest.raises(ValueError, match=":3: corrupt"):
        SearchGraph.load(path)


def test_killed_process_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "graph.jsonl"
    script = textwrap.dedent(
        f"""
        import os, signal
        from pathlib import Path
        from kernelevolve.search.graph import SearchGraph
        from kernelevolve.types import Candidate, EvalReport, FitnessValue, Status
        g = SearchGraph(Path({str(path)!r}))
        for i in range(5):
            c = Candidate(f"x = {{i}}\\n", "triton", "seed")
            g.add_candidate(c)
            g.record(c.id, EvalReport(c.id, Status.INCORRECT), FitnessValue(False, 0.0))
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    root = str(Path(kernelevolve.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", script], env=env, timeout=60)
    assert proc.returncode == -9
    loaded = SearchGraph.load(path)
    assert len(loaded) == 5 and len(loaded.evaluated()) == 5


def test_export_and_stats() -> None:
    g = SearchGraph()
    cs = build(g)
    data = g.export()
    json.dumps(data)  # JSON-able
    nodes = {n["id"]: n for n in data["nodes"]}
    d = nodes[cs["d"].id]
    assert d["operator"] == "llm" and d["mode"] == "combine" and d["backend"] == "triton"
    assert d["status"] == "ok" and d["objective"] == 4.0 and d["speedup_vs_compile"] == 2.0
    assert d["depth"] == 2 and d["order"] == 3
    assert nodes[cs["e"].id]["status"] == "pending" and nodes[cs["e"].id]["objective"] is None
    assert nodes[cs["f"].id]["status"] == "compile_error"
    edges = {(e["source"], e["target"]): e for e in data["edges"]}
    assert len(edges) == 5
    assert edges[cs["b"].id, cs["d"].id]["mode"] == "combine"
    assert edges[cs["a"].id, cs["c"].id]["operator"] == "tune"

    stats = g.stats()
    assert stats["total"] == 6 and stats["evaluated"] == 5 and stats["feasible"] == 4
    assert stats["by_status"] == {"ok": 4, "pending": 1, "compile_error": 1}
    assert stats["by_operator"] == {"seed": 2, "tune": 1, "llm": 3}
