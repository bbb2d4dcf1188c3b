"""The universal LLM operator: one operator whose prompt is rebuilt for every call.

The mode follows from the parents it is given: none -> generate; a failing parent -> repair;
two working parents -> combine; one working parent -> improve, or (with small probabilities)
combine with another good node, translate to a backend the parent lacks, or tune. The engine
calls `propose` from worker threads, so shared state (failures, sample counters, the lazily
opened knowledge base, the outage breaker) sits behind one lock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelevolve.llm.accounting import Accounting
from kernelevolve.llm.cache import ResponseCache
from kernelevolve.llm.client import LLMClient, LLMConfig, LLMUnavailable, OpenAICompatibleClient
from kernelevolve.llm.parsing import ParseFailure, parse_reply
from kernelevolve.llm.prompts import Prompt, Retriever, build_prompt, gather_inputs
from kernelevolve.search.interfaces import ProposalContext
from kernelevolve.types import INFEASIBLE, Candidate, FitnessValue, KernelSpec

if TYPE_CHECKING:
    from kernelevolve.search.graph import Node

log = logging.getLogger(__name__)

_OPERATOR_KEYS = ("enabled", "cache", "cache_dir")  # llm config keys that are not LLMConfig fields
_MAX_FAILURES_KEPT = 500


def _fitness(node: Node) -> FitnessValue:
    return node.fitness if node.fitness is not None else INFEASIBLE


class KBRetriever:
    """Adapter from kernelevolve.kb to the prompt's `Retriever`: documents plus past wins."""

    def __init__(self, kb: Any, wins: Any, spec: KernelSpec, k_docs: int = 3, k_wins: int = 1) -> None:
        self.kb, self.wins, self.spec = kb, wins, spec
        self.k_docs, self.k_wins = k_docs, k_wins

    def __call__(self, query: str, platform: Any, backend: str) -> list[tuple[str, str, str]]:
        found: list[tuple[str, str, str]] = []
        if self.kb is not None and self.k_docs > 0:
            for hit in self.kb.search(query, k=self.k_docs, platform=platform.name, backend=backend):
                found.append((hit.doc_id, hit.title, self.kb.document(hit.doc_id).text))
        if self.wins is not None and self.k_wins > 0:
            for win in self.wins.similar(self.spec, platform.name, backend, k=self.k_wins):
                label = f"Past win: {win.spec_name} on {win.platform}, {win.speedup_vs_eager:.2f}x eager ({win.backend})"
                found.append((f"past-win:{win.candidate_id}", label, f"```python\n{win.source.strip()}\n```"))
        return found


def open_knowledge_base(kb_config: Mapping[str, Any]) -> tuple[Any, Any]:
    """(KnowledgeBase, PastWinStore) from the `kb` config section; raises when the KB cannot load."""
    from kernelevolve.kb import KnowledgeBase, PastWinStore, default_encoder
    from kernelevolve.paths import cache_dir

    root = Path(str(kb_config["cache_dir"])).expanduser() if kb_config.get("cache_dir") else cache_dir()
    encoder = default_encoder()
    return KnowledgeBase.load(directory=root / "kb", encoder=encoder), PastWinStore(
        root / "past_wins", encoder
    )


class LLMOperator:
    """Operator protocol: name "llm". `arity` is what the engine selects by default (one parent);
    `arities` lists what `propose` accepts (0 -> generate, 2 -> combine).

    config: an LLMConfig, or the `llm` config section (LLMConfig fields plus `enabled`, `cache`
    (default true) and `cache_dir`; the cache defaults to <run_dir>/llm_cache, else the user
    cache). client: use this client instead (tests, a shared client). kb_config: the `kb` section
    (`enabled`: auto | true | false, `cache_dir`); retriever: overrides the KB adapter.
    p_combine / p_translate / p_tune: chances of those modes for a single working parent.
    samples_per_call: at most this many LLM calls per propose (bounded by ctx.budget_hint).
    transcript_dir: write every prompt and reply there (debugging). After
    `max_consecutive_unavailable` endpoint failures in a row, calls pause for `pause_s`.
    """

    name = "llm"
    arity = 1
    arities = (0, 1, 2)

    def __init__(
        self,
        config: LLMConfig | Mapping[str, Any] | None = None,
        *,
        client: LLMClient | None = None,
        kb_config: Mapping[str, Any] | None = None,
        retriever: Retriever | None = None,
        p_combine: float = 0.15,
        p_translate: float = 0.1,
        p_tune: float = 0.15,
        samples_per_call: int = 1,
        strict: bool = True,
        transcript_dir: str | Path | None = None,
        run_dir: str | Path | None = None,
        max_consecutive_unavailable: int = 3,
        pause_s: float = 60.0,
    ) -> None:
        if min(p_combine, p_translate, p_tune) < 0 or p_combine + p_translate + p_tune > 1:
            raise ValueError("p_combine, p_translate and p_tune must be >= 0 and sum to at most 1")
        options = dict(config) if isinstance(config, Mapping) else {}
        if client is None:
            llm_config = (
                config
                if isinstance(config, LLMConfig)
                else LLMConfig.from_mapping({k: v for k, v in options.items() if k not in _OPERATOR_KEYS})
            )
            cache = None
            if options.get("cache", True):
                from kernelevolve.paths import cache_dir

                default = Path(run_dir) / "llm_cache" if run_dir else cache_dir() / "llm_responses"
                folder = options.get("cache_dir") or default
                cache = ResponseCache(Path(str(folder)).expanduser())
            client = OpenAICompatibleClient(llm_config, cache=cache)
        self.client: LLMClient = client
        self.accounting: Accounting = client.accounting
        self.p_combine, self.p_translate, self.p_tune = p_combine, p_translate, p_tune
        self.samples_per_call = max(1, samples_per_call)
        self.strict = strict
        self.transcript_dir = Path(transcript_dir) if transcript_dir else None
        self.max_consecutive_unavailable = max(1, max_consecutive_unavailable)
        self.pause_s = pause_s
        self.failures: list[dict[str, Any]] = []
        self.failure_counts: dict[str, int] = {}
        self.mode_counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._samples: dict[str, int] = {}
        self._kb_config = dict(kb_config or {})
        self._retriever = retriever
        self._retriever_key: str | None = "given" if retriever is not None else None
        self._kb: tuple[Any, Any] | None = None
        self._kb_failed = False
        self._consecutive_unavailable = 0
        self._paused_until = 0.0
        self._warned_unavailable = False
        if retriever is None and self._kb_config.get("enabled") is True:
            self._kb = open_knowledge_base(self._kb_config)  # explicitly on: fail now, not mid-run

    # ------------------------------------------------------------------ planning

    def plan(self, ctx: ProposalContext) -> tuple[str, tuple[str, ...], str]:
        """(mode, parent ids in prompt order, target backend) for one call."""
        graph, rng = ctx.graph, ctx.rng
        if not ctx.parents:
            return "generate", (), rng.choice(ctx.backends)
        nodes = [graph.node(pid) for pid in ctx.parents]
        working = sorted((n for n in nodes if n.feasible), key=_fitness, reverse=True)
        if not working:
            first = nodes[0]
            return ("repair" if first.evaluated else "improve"), (first.id,), self._own_backend(ctx, first.id)
        best = working[0]
        if len(working) >= 2:
            return "combine", (best.id, working[1].id), self._own_backend(ctx, best.id)
        # One roll splits [0, 1) into combine | translate | tune | improve; a band that cannot be
        # served (no partner, no other backend) falls back to improve.
        roll = rng.random()
        if roll < self.p_combine:
            others = [
                n for n in graph.top(5) if n.id != best.id and n.candidate.backend == best.candidate.backend
            ]
            if others:
                partner = rng.choice(others)
                pair = sorted((best, partner), key=_fitness, reverse=True)
                return "combine", (pair[0].id, pair[1].id), best.candidate.backend
        elif roll < self.p_combine + self.p_translate:
            targets = [b for b in ctx.backends if b != best.candidate.backend]
            if targets:
                return "translate", (best.id,), rng.choice(targets)
        elif roll < self.p_combine + self.p_translate + self.p_tune:
            return "tune", (best.id,), self._own_backend(ctx, best.id)
        return "improve", (best.id,), self._own_backend(ctx, best.id)

    @staticmethod
    def _own_backend(ctx: ProposalContext, node_id: str) -> str:
        backend = ctx.graph.node(node_id).candidate.backend
        return backend if backend in ctx.backends or not ctx.backends else ctx.backends[0]

    def _retriever_for(self, spec: KernelSpec) -> Retriever | None:
        with self._lock:
            if self._retriever_key in ("given", spec.key):
                return self._retriever
            if self._kb is None and not self._kb_failed and self._kb_config.get("enabled", "auto") == "auto":
                try:
                    self._kb = open_knowledge_base(self._kb_config)
                except Exception as exc:  # auto: the KB is an aid, not a requirement
                    self._kb_failed = True
                    log.info("LLM prompts go without knowledge-base retrieval: %s", exc)
            self._retriever = KBRetriever(self._kb[0], self._kb[1], spec) if self._kb else None
            self._retriever_key = spec.key
            return self._retriever

    # ------------------------------------------------------------------ proposing

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        with self._lock:
            if time.monotonic() < self._paused_until:
                self.failure_counts["paused"] = self.failure_counts.get("paused", 0) + 1
                return []
        mode, parent_ids, backend = self.plan(ctx)
        inputs = gather_inputs(
            ctx, mode, backend, parent_ids, retriever=self._retriever_for(ctx.spec), strict=self.strict
        )
        prompt = build_prompt(inputs)
        parent_source = inputs.parents[0].source if len(inputs.parents) == 1 else None
        children: list[Candidate] = []
        for _ in range(max(1, min(ctx.budget_hint, self.samples_per_call))):
            sample = self._next_sample(prompt.id)
            try:
                response = self.client.complete(prompt.messages, sample=sample)
            except LLMUnavailable as exc:
                self._unavailable(exc.reason, prompt, parent_ids)
                break
            with self._lock:
                self._consecutive_unavailable = 0
            self._transcript(prompt, sample, response.text)
            parsed = parse_reply(response.text, parent_source)
            if isinstance(parsed, ParseFailure):
                self._fail("parse", parsed.reason, prompt, parent_ids)
                continue
            child = Candidate(
                source=parsed.source,
                backend=backend,
                operator=self.name,
                mode=mode,
                parent_ids=parent_ids,
                metadata={
                    "prompt_id": prompt.id,
                    "model": response.model,
                    "retrieved": list(prompt.retrieved),
                    "tokens": {"prompt": response.prompt_tokens, "completion": response.completion_tokens},
                    "cached": response.cached,
                    "diagnosis": prompt.diagnosis.statement if prompt.diagnosis else "",
                    "parse": parsed.how,
                    "llm_cost_s": round(response.latency_s, 3),
                },
            )
            if child.id in parent_ids:
                self._fail("unchanged", "reply reproduces its parent unchanged", prompt, parent_ids)
                continue
            if child.id in ctx.graph or any(c.id == child.id for c in children):
                self._fail("duplicate", f"reply reproduces existing node {child.id}", prompt, parent_ids)
                continue
            children.append(child)
        with self._lock:
            self.mode_counts[mode] = self.mode_counts.get(mode, 0) + 1
        return children

    def _next_sample(self, prompt_id: str) -> int:
        with self._lock:
            sample = self._samples.get(prompt_id, 0)
            self._samples[prompt_id] = sample + 1
            return sample

    def _fail(self, kind: str, reason: str, prompt: Prompt, parent_ids: Sequence[str]) -> None:
        entry = {"kind": kind, "reason": reason, "mode": prompt.mode, "parent_ids": list(parent_ids)}
        entry["prompt_id"] = prompt.id
        with self._lock:
            self.failure_counts[kind] = self.failure_counts.get(kind, 0) + 1
            if len(self.failures) < _MAX_FAILURES_KEPT:
                self.failures.append(entry)
        log.debug("LLM %s proposal failed (%s): %s", prompt.mode, kind, reason)

    def _unavailable(self, reason: str, prompt: Prompt, parent_ids: Sequence[str]) -> None:
        self._fail("unavailable", reason, prompt, parent_ids)
        with self._lock:
            self._consecutive_unavailable += 1
            first = not self._warned_unavailable
            self._warned_unavailable = True
            pause = self._consecutive_unavailable >= self.max_consecutive_unavailable
            if pause:
                self._consecutive_unavailable = 0
                self._paused_until = time.monotonic() + self.pause_s
        if first:  # once per run: the failures list and results.json carry every later one
            log.warning("LLM endpoint unavailable: %s (LLM proposals fail until it answers)", reason)
        if pause:
            log.warning("LLM operator paused for %.0f s after repeated endpoint failures", self.pause_s)

    def _transcript(self, prompt: Prompt, sample: int, reply: str) -> None:
        if self.transcript_dir is None:
            return
        self.transcript_dir.mkdir(parents=True, exist_ok=True)
        path = self.transcript_dir / f"{prompt.id}-{sample}.md"
        path.write_text(f"{prompt.text()}\n\n### reply\n{reply}\n", encoding="utf-8")

    def report(self) -> dict[str, Any]:
        """For results.json: usage, cost and every recorded failure."""
        with self._lock:
            return {
                "model": self.client.config.model,
                "base_url": self.client.config.base_url,
                "accounting": self.accounting.to_json(),
                "modes": dict(self.mode_counts),
                "failure_counts": dict(self.failure_counts),
                "failures": list(self.failures),
            }
