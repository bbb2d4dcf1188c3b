"""What the endpoint's replies were worth: usable, repeats, or unusable, and what to say about it.

`classify` names why a reply gave no new kernel: no code, a refusal, cut off at the token limit,
unparseable edits (`parse`), a repeat of an earlier kernel (`duplicate`) or of its parent
(`unchanged`). `ReplyHealth` counts them, logs each kind once (later ones are counted), says within
the first replies when an endpoint answers only in prose, and tells the scheduler when the operator
should rest: after `rest_after` replies in a row that gave nothing new. The counts go into the
accounting's ledger, so they add up over the sessions of a run.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import Counter
from typing import Any

from kernelevolve.llm.accounting import Accounting

log = logging.getLogger(__name__)

UNUSABLE = ("no_code", "refusal", "truncated", "parse")  # replies without a usable kernel
REPEATS = ("duplicate", "unchanged")  # usable code, seen before
PROSE = ("no_code", "refusal")
FIRST_REPLIES = 3  # an endpoint whose first this many replies are all prose is reported as such
_REFUSAL = re.compile(
    r"\b(i(?:'m| am) sorry|i can(?:not|'t) (?:help|assist|comply|do that|provide)|"
    r"i(?:'m| am) (?:unable|not able) to|as an ai\b)",
    re.IGNORECASE,
)
_ADVICE = {
    "no_code": "check that llm.model is a code model and follows the answer format",
    "refusal": "the model declined the task",
    "truncated": "raise llm.max_tokens",
    "parse": "its code or edits could not be applied",
    "duplicate": "the next prompt names the earlier attempt it repeated",
    "unchanged": "the next prompt says so",
}


def classify(text: str, reason: str, truncated: bool) -> str:
    """The kind of a reply the parser rejected (`reason` is its ParseFailure reason)."""
    if truncated:
        return "truncated"
    if "no code block" in reason or reason == "empty reply":
        return "refusal" if _REFUSAL.search(text[:400]) else "no_code"
    if "cut off" in reason:
        return "truncated"
    return "parse"


class ReplyHealth:
    """Counts of the replies one LLM operator got; every method may be called from any thread."""

    def __init__(self, endpoint: str, accounting: Accounting, rest_after: int = 3) -> None:
        self.endpoint = endpoint
        self.accounting = accounting
        self.rest_after = max(1, rest_after)
        self._lock = threading.Lock()
        self._first: list[str] = []  # kinds of the first replies ("ok" for a usable one)
        self._recent: list[str] = []  # the current run of replies that gave nothing new
        self._logged: set[str] = set()
        self.prose_only = False

    def observe(self, kind: str | None, reason: str = "") -> None:
        """One reply: `kind` None for a new kernel, else one of UNUSABLE or REPEATS."""
        self.accounting.record_reply(kind or "new")
        with self._lock:
            if len(self._first) < FIRST_REPLIES:
                self._first.append(kind or "new")
            if kind is None:
                self._recent.clear()
                return
            self._recent.append(kind)
            first_of_kind = kind not in self._logged
            self._logged.add(kind)
            prose = (
                not self.prose_only
                and len(self._first) == FIRST_REPLIES
                and all(k in PROSE for k in self._first)
            )
            self.prose_only = self.prose_only or prose
        if prose:
            log.error(
                "LLM endpoint %s answered its first %d replies in prose, without code: %s",
                self.endpoint,
                FIRST_REPLIES,
                _ADVICE["no_code"],
            )
        if first_of_kind:
            level = logging.WARNING if kind in UNUSABLE else logging.INFO
            log.log(
                level,
                "LLM reply gave no new kernel (%s: %s); %s. Later ones are counted in results.json, not logged",
                kind,
                reason or kind,
                _ADVICE.get(kind, ""),
            )

    def rest_reason(self) -> str | None:
        """Why asking again at once would be wasted, or None."""
        with self._lock:
            if len(self._recent) < self.rest_after:
                return None
            counts = Counter(self._recent)
            self._recent.clear()  # a rest ends the run of replies: the next rest needs a new one
        detail = ", ".join(f"{kind.replace('_', ' ')} x{n}" for kind, n in counts.most_common())
        return f"its last {sum(counts.values())} replies gave no new kernel ({detail})"

    def to_json(self) -> dict[str, Any]:
        """The run's replies (every session) by what they gave."""
        kinds = self.accounting.totals().replies_by_kind
        return {
            "replies": sum(kinds.values()),
            "new_kernels": kinds.get("new", 0),
            "unusable": sum(kinds.get(k, 0) for k in UNUSABLE),
            "repeats": sum(kinds.get(k, 0) for k in REPEATS),
            "prose_only": self.prose_only,
        }
