"""Thread-safe token and cost totals of a run's LLM traffic, over every session of the run.

With a ledger (``<run dir>/llm_calls.jsonl``) every call, cache hit, retry and failure is one JSON
line appended as it happens, and a resumed run reads the earlier sessions' lines back: its totals
(results.json, the budget rules) are the run's, not the last session's. A torn last line (a kill
mid-write) is skipped. Without a ledger the totals are this process's.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

LEDGER_FILE = "llm_calls.jsonl"


@dataclass(frozen=True)
class AccountingTotals:
    calls: int = 0  # requests answered by the endpoint (cache hits not included)
    failures: int = 0  # requests that ended in LLMUnavailable after retries
    cached_hits: int = 0
    retries: int = 0  # extra attempts after 429/5xx/connection errors
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0  # summed wall time of answered calls
    truncated: int = 0  # answered calls cut off at the token limit (finish_reason "length")
    failures_by_kind: Mapping[str, int] = field(default_factory=dict)
    replies_by_kind: Mapping[str, int] = field(default_factory=dict)  # "new" or why a reply gave nothing

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def mean_latency_s(self) -> float | None:
        return self.latency_s / self.calls if self.calls else None

    def to_json(self) -> dict[str, Any]:
        mean = self.mean_latency_s
        return {
            "calls": self.calls,
            "failures": self.failures,
            "failures_by_kind": dict(sorted(self.failures_by_kind.items())),
            "replies_by_kind": dict(sorted(self.replies_by_kind.items())),
            "cached_hits": self.cached_hits,
            "retries": self.retries,
            "truncated": self.truncated,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "latency_s": round(self.latency_s, 3),
            "mean_latency_s": round(mean, 3) if mean is not None else None,
        }


def call_cost_usd(
    prompt_tokens: int, completion_tokens: int, price_per_1k_input: float, price_per_1k_output: float
) -> float:
    return prompt_tokens / 1000.0 * price_per_1k_input + completion_tokens / 1000.0 * price_per_1k_output


class _Sums:
    """Mutable running sums; `add` takes one ledger record."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.failure_kinds: Counter[str] = Counter()
        self.reply_kinds: Counter[str] = Counter()
        self.cost_usd = 0.0
        self.latency_s = 0.0

    def add(self, record: Mapping[str, Any]) -> None:
        event = record.get("event")
        if event == "call":
            self.counts["calls"] += 1
            self.counts["prompt_tokens"] += int(record.get("prompt_tokens", 0))
            self.counts["completion_tokens"] += int(record.get("completion_tokens", 0))
            self.counts["truncated"] += bool(record.get("truncated"))
            self.cost_usd += float(record.get("cost_usd", 0.0))
            self.latency_s += float(record.get("latency_s", 0.0))
        elif event == "cached":
            self.counts["cached_hits"] += 1
        elif event == "retry":
            self.counts["retries"] += 1
        elif event == "failure":
            self.counts["failures"] += 1
            self.failure_kinds[str(record.get("kind", "connection"))] += 1
        elif event == "reply":
            self.reply_kinds[str(record.get("kind", "new"))] += 1

    def totals(self, *others: _Sums) -> AccountingTotals:
        counts, kinds, replies = Counter(self.counts), Counter(self.failure_kinds), Counter(self.reply_kinds)
        cost, latency = self.cost_usd, self.latency_s
        for other in others:
            counts.update(other.counts)
            kinds.update(other.failure_kinds)
            replies.update(other.reply_kinds)
            cost, latency = cost + other.cost_usd, latency + other.latency_s
        return AccountingTotals(
            calls=counts["calls"],
            failures=counts["failures"],
            cached_hits=counts["cached_hits"],
            retries=counts["retries"],
            prompt_tokens=counts["prompt_tokens"],
            completion_tokens=counts["completion_tokens"],
            cost_usd=cost,
            latency_s=latency,
            truncated=counts["truncated"],
            failures_by_kind=dict(kinds),
            replies_by_kind=dict(replies),
        )


def _read_ledger(path: Path) -> Iterable[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            log.warning("%s:%d: unreadable ledger line skipped", path, number)
            continue
        if isinstance(record, dict):
            yield record


class Accounting:
    """Running totals; every method may be called from any thread. `ledger`: the JSONL file that
    keeps them across the sessions of one run (None: this process only)."""

    def __init__(self, ledger: Path | str | None = None) -> None:
        self._lock = threading.Lock()
        self._earlier = _Sums()  # the run's earlier sessions, read from the ledger
        self._session = _Sums()
        self.ledger = Path(ledger) if ledger is not None else None
        self.sessions = 1
        self.started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        if self.ledger is not None:
            self.ledger.parent.mkdir(parents=True, exist_ok=True)
            for record in _read_ledger(self.ledger):
                if record.get("event") == "session":
                    self.sessions += 1
                    if self.sessions == 2:
                        self.started = str(record.get("started", self.started))
                self._earlier.add(record)
            if self.ledger.is_file() and not self.ledger.read_bytes().endswith(b"\n"):
                with open(self.ledger, "a", encoding="utf-8") as handle:
                    handle.write("\n")  # end a torn line, so this session's lines start clean
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            self._append({"event": "session", "started": now})

    def _append(self, record: dict[str, Any]) -> None:
        if self.ledger is None:
            return
        with open(self.ledger, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, separators=(",", ":")) + "\n")

    def _record(self, record: dict[str, Any]) -> None:
        with self._lock:
            self._session.add(record)
            self._append(record)

    def record_call(
        self,
        prompt_tokens: int,
        completion_tokens: int,
        cost_usd: float,
        latency_s: float,
        *,
        truncated: bool = False,
    ) -> None:
        self._record(
            {
                "event": "call",
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "cost_usd": cost_usd,
                "latency_s": round(latency_s, 4),
                "truncated": truncated,
            }
        )

    def record_cached(self) -> None:
        self._record({"event": "cached"})

    def record_retry(self) -> None:
        self._record({"event": "retry"})

    def record_failure(self, kind: str = "connection") -> None:
        self._record({"event": "failure", "kind": kind})

    def record_reply(self, kind: str) -> None:
        """What a reply gave: "new" (a new kernel) or why it gave nothing (llm.health's kinds)."""
        self._record({"event": "reply", "kind": kind})

    @property
    def cost_usd(self) -> float:
        """The run's cost so far (every session), for the LLM-cost termination rule."""
        return self.totals().cost_usd

    def totals(self) -> AccountingTotals:
        """The run's totals: earlier sessions (from the ledger) and this one."""
        with self._lock:
            return self._earlier.totals(self._session)

    def session_totals(self) -> AccountingTotals:
        with self._lock:
            return self._session.totals()

    def to_json(self) -> dict[str, Any]:
        data = self.totals().to_json()
        data["sessions"] = self.sessions
        data["this_session"] = self.session_totals().to_json()
        return data
