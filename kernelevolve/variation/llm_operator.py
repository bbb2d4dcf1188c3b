"""The universal LLM operator: one operator whose prompt is rebuilt for every call.

The mode follows from the parents it is given: none -> generate; a failing parent -> repair;
two working parents -> combine; one working parent -> improve, or (with small probabilities)
combine with another good node, translate to a backend the parent lacks, or tune.

It spends calls like a careful engineer. Every prompt carries the lineage's attempts (llm/memory.py),
including replies that never became nodes, which it records in the graph; a reply whose code was
seen before is not evaluated again. A prompt is not sent twice (unless `samples_per_prompt` allows
it): which samples of a prompt exist is read from the graph, so a resumed run asks for what it lacks
and finds the rest in the reply cache. It stops calling at the run's budget, and `rest_reason` tells
the scheduler when its recent replies gave nothing new. The engine calls `prepare` (the prompt, from
the graph) in its own thread and the calls it returns in worker threads, so shared state sits behind
one lock.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from kernelevolve.llm.accounting import LEDGER_FILE, Accounting
from kernelevolve.llm.cache import ResponseCache
from kernelevolve.llm.client import LLMClient, LLMConfig, LLMResponse, LLMUnavailable, OpenAICompatibleClient
from kernelevolve.llm.health import ReplyHealth, classify
from kernelevolve.llm.memory import idea_of, known_sources, record_rejected, samples_used, source_key
from kernelevolve.llm.parsing import ParseFailure, parse_reply
from kernelevolve.llm.prompt_inputs import MEMORY_TOKENS
from kernelevolve.llm.prompts import Prompt, Retriever, build_prompt, gather_inputs
from kernelevolve.llm.retrieval import KBRetriever, open_knowledge_base
from kernelevolve.search.interfaces import ProposalContext
from kernelevolve.types import INFEASIBLE, Candidate, FitnessValue, KernelSpec

if TYPE_CHECKING:
    from kernelevolve.search.graph import Node, SearchGraph

log = logging.getLogger(__name__)

# llm config keys that are the operator's, not the client's (LLMConfig)
_OPERATOR_KEYS = (
    "enabled",
    "cache",
    "cache_dir",
    "budget",
    "samples_per_prompt",
    "memory_tokens",
    "rest_after",
)
BUDGET_KEYS = ("calls", "tokens", "cost_usd")
_MAX_FAILURES_KEPT = 500

__all__ = ["BUDGET_KEYS", "KBRetriever", "LLMOperator", "open_knowledge_base"]


class _Ask(NamedTuple):
    """One sample of one prompt, and the idea its reply stated."""

    prompt: Prompt
    sample: int
    parent_ids: tuple[str, ...]
    idea: str


def _fitness(node: Node) -> FitnessValue:
    return node.fitness if node.fitness is not None else INFEASIBLE


def _budget(value: Any) -> dict[str, float]:
    budget = dict(value or {})
    unknown = sorted(set(budget) - set(BUDGET_KEYS))
    if unknown:
        raise ValueError(f"unknown llm.budget keys {unknown}; valid: {', '.join(BUDGET_KEYS)}")
    return {k: float(v) for k, v in budget.items() if v is not None}


class LLMOperator:
    """Operator protocol: name "llm". `arity` is what the engine selects by default (one parent);
    `arities` lists what `propose` accepts (0 -> generate, 2 -> combine).

    config: an LLMConfig, or the `llm` config section (LLMConfig fields plus `enabled`, `cache`
    (default true), `cache_dir`, `budget` and the options below; the cache defaults to
    <run_dir>/llm_cache, else the user cache; with a run_dir the accounting keeps its ledger there).
    client: use this client instead (tests, a shared client). kb_config: the `kb` section
    (`enabled`: auto | true | false, `cache_dir`); retriever: overrides the KB adapter.
    p_combine / p_translate / p_tune: chances of those modes for a single working parent.
    samples_per_call: at most this many LLM calls per propose (bounded by ctx.budget_hint).
    samples_per_prompt: how often one prompt may be sent (default: samples_per_call); a prompt that
    was sent that often is not sent again. memory_tokens: budget of the attempts section (0: none).
    budget: {calls, tokens, cost_usd} for the whole run (every session); at the limit calls stop.
    rest_after: replies in a row that gave nothing new before `rest_reason` asks for a rest.
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
        samples_per_prompt: int | None = None,
        memory_tokens: int | None = None,
        budget: Mapping[str, float | None] | None = None,
        rest_after: int | None = None,
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
            ledger = Path(run_dir) / LEDGER_FILE if run_dir else None
            client = OpenAICompatibleClient(llm_config, cache=cache, accounting=Accounting(ledger))
        self.client: LLMClient = client
        self.accounting: Accounting = client.accounting
        self.p_combine, self.p_translate, self.p_tune = p_combine, p_translate, p_tune
        self.samples_per_call = max(1, samples_per_call)
        self.samples_per_prompt = max(
            self.samples_per_call, int(_pick(samples_per_prompt, options, "samples_per_prompt", 1))
        )
        self.memory_tokens = int(_pick(memory_tokens, options, "memory_tokens", MEMORY_TOKENS))
        self.budget = _budget(budget if budget is not None else options.get("budget"))
        self.health = ReplyHealth(
            client.config.base_url, self.accounting, int(_pick(rest_after, options, "rest_after", 3))
        )
        self.strict = strict
        self.transcript_dir = Path(transcript_dir) if transcript_dir else None
        self.max_consecutive_unavailable = max(1, max_consecutive_unavailable)
        self.pause_s = pause_s
        self.failures: list[dict[str, Any]] = []
        self.failure_counts: dict[str, int] = {}
        self.mode_counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._claimed: dict[str, set[int]] = {}  # prompt id -> samples asked for in this session
        self._kb_config = dict(kb_config or {})
        self._retriever = retriever
        self._retriever_key: str | None = "given" if retriever is not None else None
        self._kb: tuple[Any, Any] | None = None
        self._kb_failed = False
        self._consecutive_unavailable = 0
        self._paused_until = 0.0
        self._warned: set[str] = set()
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
            self._retriever = (
                KBRetriever(self._kb[0], self._kb[1], spec, cutoff=self.accounting.started)
                if self._kb
                else None
            )
            self._retriever_key = spec.key
            return self._retriever

    # ------------------------------------------------------------------ proposing

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        return self.prepare(ctx)()

    def prepare(self, ctx: ProposalContext) -> Callable[[], list[Candidate]]:
        """Read the graph now (the engine's thread: the prompt is the graph's when the job was handed
        out) and return the slow part, the calls, for the proposal pool."""
        with self._lock:
            paused = time.monotonic() < self._paused_until
            if paused:
                self.failure_counts["paused"] = self.failure_counts.get("paused", 0) + 1
        if paused or self._spent():
            return list
        mode, parent_ids, backend = self.plan(ctx)
        inputs = gather_inputs(
            ctx,
            mode,
            backend,
            parent_ids,
            retriever=self._retriever_for(ctx.spec),
            strict=self.strict,
            memory_tokens=self.memory_tokens,
        )
        prompt = build_prompt(inputs)
        samples = []
        for _ in range(max(1, min(ctx.budget_hint, self.samples_per_call))):
            sample = self._claim(ctx.graph, prompt.id)
            if sample is None:  # asked as often as allowed: only a changed graph gives a new prompt
                self._count("repeat_prompt")
                break
            samples.append(sample)
        with self._lock:
            self.mode_counts[mode] = self.mode_counts.get(mode, 0) + 1
        parent_source = inputs.parents[0].source if len(inputs.parents) == 1 else None
        return lambda: self._ask(ctx, prompt, samples, parent_ids, backend, parent_source)

    def _ask(
        self,
        ctx: ProposalContext,
        prompt: Prompt,
        samples: list[int],
        parent_ids: tuple[str, ...],
        backend: str,
        parent_source: str | None,
    ) -> list[Candidate]:
        children: list[Candidate] = []
        for index, sample in enumerate(samples):
            try:
                response = self.client.complete(prompt.messages, sample=sample)
            except LLMUnavailable as exc:
                for unasked in samples[index:]:
                    self._release(prompt.id, unasked)
                self._unavailable(exc.reason, prompt, parent_ids)
                break
            with self._lock:
                self._consecutive_unavailable = 0
            self._transcript(prompt, sample, response.text)
            ask = _Ask(prompt, sample, parent_ids, idea_of(response.text))
            child = self._child(ctx, response, ask, backend, parent_source, children)
            if child is not None:
                children.append(child)
            if self._over_budget() is not None:
                break
        return children

    def _child(
        self,
        ctx: ProposalContext,
        response: LLMResponse,
        ask: _Ask,
        backend: str,
        parent_source: str | None,
        siblings: Sequence[Candidate],
    ) -> Candidate | None:
        """The reply as a new candidate, or None (the reason recorded in the graph and the counts)."""
        parsed = parse_reply(response.text, parent_source)
        if isinstance(parsed, ParseFailure):
            kind = classify(response.text, parsed.reason, response.truncated)
            return self._reject(ctx.graph, kind, parsed.reason, ask)
        if response.truncated and (parsed.how == "unfenced" or "unclosed code block" in parsed.notes):
            return self._reject(ctx.graph, "truncated", "cut off at the token limit", ask)
        known = known_sources(ctx.graph)
        known.update((source_key(c.source), c.id) for c in siblings)
        repeats = known.get(source_key(parsed.source))
        if repeats in ask.parent_ids:
            return self._reject(ctx.graph, "unchanged", "reply reproduces its parent", ask, repeats or "")
        if repeats is not None:
            reason = f"reply reproduces existing node {repeats}"
            return self._reject(ctx.graph, "duplicate", reason, ask, repeats)
        self.health.observe(None)
        prompt = ask.prompt
        return Candidate(
            source=parsed.source,
            backend=backend,
            operator=self.name,
            mode=prompt.mode,
            parent_ids=ask.parent_ids,
            metadata={
                "prompt_id": prompt.id,
                "sample": ask.sample,
                "model": response.model,
                "retrieved": list(prompt.retrieved),
                "tokens": {"prompt": response.prompt_tokens, "completion": response.completion_tokens},
                "requests": response.requests,
                "cached": response.cached,
                "diagnosis": prompt.diagnosis.statement if prompt.diagnosis else "",
                "idea": ask.idea,
                "parse": parsed.how,
                "llm_cost_s": round(response.latency_s, 3),
            },
        )

    # ------------------------------------------------------------------ samples, budget, rest

    def _claim(self, graph: SearchGraph, prompt_id: str) -> int | None:
        """The first sample of `prompt_id` that neither the graph nor this session holds, or None when
        the prompt was asked `samples_per_prompt` times."""
        used = samples_used(graph, prompt_id)
        with self._lock:
            taken = used | self._claimed.setdefault(prompt_id, set())
            sample = next(s for s in itertools.count() if s not in taken)
            if sample >= self.samples_per_prompt:
                return None
            self._claimed[prompt_id].add(sample)
            return sample

    def _release(self, prompt_id: str, sample: int) -> None:
        with self._lock:
            self._claimed.get(prompt_id, set()).discard(sample)

    def _over_budget(self) -> str | None:
        """Why the run's LLM budget allows no more calls, or None."""
        if not self.budget:
            return None
        totals = self.accounting.totals()
        used = {"calls": totals.calls, "tokens": totals.tokens, "cost_usd": totals.cost_usd}
        for key, limit in self.budget.items():
            if used[key] >= limit:
                return f"the run's LLM budget is spent ({key}: {used[key]:g} of {limit:g})"
        return None

    def _spent(self) -> bool:
        reason = self._over_budget()
        if reason is not None:
            self._count("budget")
            self._warn_once("budget", reason + "; no more LLM calls")
        return reason is not None

    def rest_reason(self) -> str | None:
        """Why asking this operator again at once would be wasted (the scheduler rests it), or None."""
        return self._over_budget() or self.health.rest_reason()

    # ------------------------------------------------------------------ failures

    def _count(self, kind: str) -> None:
        with self._lock:
            self.failure_counts[kind] = self.failure_counts.get(kind, 0) + 1

    def _warn_once(self, key: str, message: str) -> None:
        with self._lock:
            first = key not in self._warned
            self._warned.add(key)
        if first:
            log.warning("%s", message)

    def _fail(self, kind: str, reason: str, prompt: Prompt, parent_ids: Sequence[str]) -> None:
        entry = {"kind": kind, "reason": reason, "mode": prompt.mode, "parent_ids": list(parent_ids)}
        entry["prompt_id"] = prompt.id
        self._count(kind)
        with self._lock:
            if len(self.failures) < _MAX_FAILURES_KEPT:
                self.failures.append(entry)
        log.debug("LLM %s proposal failed (%s): %s", prompt.mode, kind, reason)

    def _reject(
        self, graph: SearchGraph, kind: str, reason: str, ask: _Ask, repeats: str = ""
    ) -> Candidate | None:
        """A reply that gave no new kernel: counted, logged once per kind, kept in the graph. None."""
        self._fail(kind, reason, ask.prompt, ask.parent_ids)
        record_rejected(
            graph,
            kind=kind,
            reason=reason,
            prompt_id=ask.prompt.id,
            sample=ask.sample,
            mode=ask.prompt.mode,
            parent_ids=ask.parent_ids,
            idea=ask.idea,
            repeats=repeats,
        )
        self.health.observe(kind, reason)
        return None

    def _unavailable(self, reason: str, prompt: Prompt, parent_ids: Sequence[str]) -> None:
        self._fail("unavailable", reason, prompt, parent_ids)
        with self._lock:
            self._consecutive_unavailable += 1
            pause = self._consecutive_unavailable >= self.max_consecutive_unavailable
            if pause:
                self._consecutive_unavailable = 0
                self._paused_until = time.monotonic() + self.pause_s
        # once per run: the failures list and results.json carry every later one
        self._warn_once(
            "unavailable", f"LLM endpoint unavailable: {reason} (LLM proposals fail until it answers)"
        )
        if pause:
            log.warning("LLM operator paused for %.0f s after repeated endpoint failures", self.pause_s)

    def _transcript(self, prompt: Prompt, sample: int, reply: str) -> None:
        if self.transcript_dir is None:
            return
        self.transcript_dir.mkdir(parents=True, exist_ok=True)
        path = self.transcript_dir / f"{prompt.id}-{sample}.md"
        path.write_text(f"{prompt.text()}\n\n### reply\n{reply}\n", encoding="utf-8")

    def report(self) -> dict[str, Any]:
        """For results.json: usage and cost over every session of the run, what the replies gave, the
        endpoint's health, and every failure recorded in this session."""
        with self._lock:
            return {
                "model": self.client.config.model,
                "base_url": self.client.config.base_url,
                "accounting": self.accounting.to_json(),
                "replies": self.health.to_json(),
                "budget": dict(self.budget),
                "modes": dict(self.mode_counts),
                "failure_counts": dict(self.failure_counts),
                "failures": list(self.failures),
            }


def _pick(value: Any, options: Mapping[str, Any], key: str, default: Any) -> Any:
    """An explicit argument, else the config section's value, else the default."""
    if value is not None:
        return value
    found = options.get(key)
    return default if found is None else found
