"""Replay: propose kernels that won before on specs of the same structure (LLM-free, arity 0).

Only a win whose spec's reference computes what this one does is proposed: the same traced ops, wired
the same way, on inputs of the same ranks (`specs/structure.py`), at whatever sizes. A win for another
program (a GELU kernel for a linear solve) would only spend an evaluation and turn "nothing to propose"
into "incorrect"; a win recorded without a structure is never proposed. Among the wins that fit, the
store's ranking (embedding similarity, tags, the very same spec first) orders them. The operator only
proposes wins for backends the context allows, skips ones already in the graph, and so runs dry once
every fitting win has been tried.
"""

from __future__ import annotations

import logging
from pathlib import Path

from kernelevolve.kb.encoder import KBUnavailable, missing_kb_packages
from kernelevolve.kb.past_wins import PastWinStore
from kernelevolve.search.interfaces import ProposalContext
from kernelevolve.specs.structure import spec_structure
from kernelevolve.types import Candidate

log = logging.getLogger(__name__)


class ReplayOperator:
    name = "replay"
    arity = 0

    def __init__(
        self, store: PastWinStore | str | Path | None = None, k: int = 4, min_score: float = 0.7
    ) -> None:
        """`store`: a PastWinStore or its directory (default: cache_dir()/past_wins).

        `min_score` (cosine + tag/same-spec bonuses) keeps wins for unrelated specs out: with
        all-MiniLM-L6-v2, the summaries of any two KernelBench modules already score about 0.5-0.6
        from shared boilerplate, while the same operation under other names and sizes scores 0.9.
        Set it to 0 to replay whatever is nearest.
        """
        if k < 1:
            raise ValueError(f"replay k must be at least 1, got {k}")
        self.store = store if isinstance(store, PastWinStore) else PastWinStore(store)
        self.k = k
        self.min_score = min_score
        self._disabled_reason = ""
        self._checked = False
        self._structures: dict[str, str] = {}  # spec key -> its structure key

    def _available(self) -> bool:
        if self._disabled_reason:
            return False
        if not self._checked:
            missing = missing_kb_packages()
            if missing:
                self._disable(
                    f"packages {', '.join(missing)} are not installed (pip install 'kernelevolve[kb]')"
                )
                return False
            self._checked = True
        return True

    def _disable(self, reason: str) -> None:
        self._disabled_reason = reason
        log.warning("replay operator proposes nothing: %s", reason)

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        if not ctx.backends or not self._available():
            return []
        try:
            # Every ranked win, then the backend filter: the store ranks across backends at once.
            ranked = self.store.scored(ctx.spec, ctx.platform.name, backend=None, k=None)
        except KBUnavailable as exc:
            self._disable(str(exc))
            return []
        if ctx.spec.key not in self._structures:
            self._structures[ctx.spec.key] = spec_structure(ctx.spec)
        structure = self._structures[ctx.spec.key]
        proposals: list[Candidate] = []
        seen: set[str] = set()
        for win, score in ranked:
            if win.backend not in ctx.backends or score < self.min_score:
                continue
            if not structure or win.structure != structure:
                continue  # another program's kernel, however similar its text
            candidate = Candidate(
                source=win.source,
                backend=win.backend,
                operator=self.name,
                mode="replay",
                metadata={
                    "past_win": {
                        "spec_name": win.spec_name,
                        "speedup": win.speedup_vs_eager,
                        "speedup_vs_compile": win.speedup_vs_compile,
                        "platform": win.platform,
                        "score": round(score, 4),
                    }
                },
            )
            if candidate.id in seen or candidate.id in ctx.graph:
                continue
            seen.add(candidate.id)
            proposals.append(candidate)
            if len(proposals) >= self.k:
                break
        if proposals:
            log.info("replay: %d past wins proposed for %s", len(proposals), ctx.spec.name)
        return proposals
