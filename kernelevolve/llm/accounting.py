"""Thread-safe token and cost totals for one run's LLM traffic (reported in results.json)."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class AccountingTotals:
    calls: int  # requests answered by the endpoint (cache hits not included)
    failures: int  # calls that ended in LLMUnavailable after retries
    cached_hits: int
    retries: int  # extra attempts after 429/5xx/connection errors
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    latency_s: float  # summed wall time of answered calls

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["cost_usd"] = round(self.cost_usd, 6)
        data["latency_s"] = round(self.latency_s, 3)
        return data


def call_cost_usd(
    prompt_tokens: int, completion_tokens: int, price_per_1k_input: float, price_per_1k_output: float
) -> float:
    return prompt_tokens / 1000.0 * price_per_1k_input + completion_tokens / 1000.0 * price_per_1k_output


class Accounting:
    """Running totals; every method may be called from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls = 0
        self._failures = 0
        self._cached = 0
        self._retries = 0
        self._prompt_tokens = 0
        self._completion_tokens = 0
        self._cost_usd = 0.0
        self._latency_s = 0.0

    def record_call(
        self, prompt_tokens: int, completion_tokens: int, cost_usd: float, latency_s: float
    ) -> None:
        with self._lock:
            self._calls += 1
            self._prompt_tokens += prompt_tokens
            self._completion_tokens += completion_tokens
            self._cost_usd += cost_usd
            self._latency_s += latency_s

    def record_cached(self) -> None:
        with self._lock:
            self._cached += 1

    def record_retry(self) -> None:
        with self._lock:
            self._retries += 1

    def record_failure(self) -> None:
        with self._lock:
            self._failures += 1

    @property
    def cost_usd(self) -> float:
        """For the LLM-cost termination rule (SearchState.llm_cost_usd)."""
        with self._lock:
            return self._cost_usd

    def totals(self) -> AccountingTotals:
        with self._lock:
            return AccountingTotals(
                calls=self._calls,
                failures=self._failures,
                cached_hits=self._cached,
                retries=self._retries,
                prompt_tokens=self._prompt_tokens,
                completion_tokens=self._completion_tokens,
                cost_usd=self._cost_usd,
                latency_s=self._latency_s,
            )

    def to_json(self) -> dict[str, Any]:
        return self.totals().to_json()
