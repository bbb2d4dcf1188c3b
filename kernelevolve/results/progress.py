"""Progress on a terminal: one tqdm bar that names the phase a job is in, with log lines above it.

    with Progress(enabled=True) as progress:
        progress.phase("timing the baselines")                       # no count: elapsed time ticks
        progress.phase("search", total=24, unit="eval", budget_s=270)  # a count, and the time left
        progress.advance(note="best 1.30x")

The bar shows no rate-based ETA (the first evaluations are the slowest, so it misleads); a phase with a
time budget shows the most time it has left instead. Each phase is also logged at INFO, so a log file or a
terminal without a bar says what the job is doing. While a bar is shown, console log handlers of the root
logger write through tqdm (tqdm.contrib.logging), above the bar instead of into it.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from types import TracebackType
from typing import Any, TextIO

log = logging.getLogger(__name__)

COUNTED = "{desc}: {n_fmt}/{total_fmt} {unit} |{bar}| {elapsed}{postfix}"
UNCOUNTED = "{desc}: {elapsed}{postfix}"
TICK_S = 0.5


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds + 0.5))
    return f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    """A bar for one job, moved through phases; a no-op bar where `enabled` is false or `file` (stderr by
    default) is not a terminal. Phases are logged either way."""

    def __init__(self, enabled: bool = True, file: TextIO | None = None, prefix: str = "") -> None:
        stream = file if file is not None else sys.stderr
        self.shown = bool(enabled) and (file is not None or stream.isatty())
        self.prefix = prefix
        self._file = stream
        self._bar: Any = None
        self._budget_s: float | None = None
        self._note = ""
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._stack = contextlib.ExitStack()

    # ------------------------------------------------------------------------------ lifecycle
    def __enter__(self) -> Progress:
        if self.shown:
            from tqdm.contrib.logging import logging_redirect_tqdm

            if any(_is_console(handler) for handler in logging.root.handlers):
                self._stack.enter_context(logging_redirect_tqdm())
            self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=2)
            self._ticker = None
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self._stack.close()

    def _tick(self) -> None:
        while not self._stop.wait(TICK_S):
            bar = self._bar
            if bar is not None:
                self._postfix(bar)
                bar.refresh()

    # -------------------------------------------------------------------------------- updates
    def phase(
        self,
        name: str,
        total: int | None = None,
        unit: str = "",
        budget_s: float | None = None,
        done: int = 0,
    ) -> None:
        """A new phase: `name`, counted to `total` (from `done`) or not, with at most `budget_s` seconds."""
        what = f"{self.prefix}{name}"
        log.info("%s%s", what, f" ({done}/{total} {unit} done)" if total and done else "")
        self._budget_s = budget_s
        self._note = ""
        if not self.shown or self._stop.is_set():
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=None, desc=what, file=self._file, dynamic_ncols=True, bar_format=UNCOUNTED)
        bar = self._bar
        bar.total = total
        bar.unit = unit
        bar.bar_format = COUNTED if total else UNCOUNTED
        bar.set_description_str(what, refresh=False)
        bar.reset(total=total)
        if done:
            bar.update(done)
        self._postfix(bar)
        bar.refresh()

    def advance(self, n: int = 1, note: str | None = None) -> None:
        if note is not None:
            self._note = note
        bar = self._bar
        if bar is not None:
            self._postfix(bar)
            bar.update(n)

    def note(self, text: str) -> None:
        self._note = text
        bar = self._bar
        if bar is not None:
            self._postfix(bar)
            bar.refresh()

    def _postfix(self, bar: Any) -> None:
        parts = [self._note] if self._note else []
        if self._budget_s is not None:
            left = self._budget_s - bar.format_dict["elapsed"]
            parts.append(f"at most {_clock(left)} left" if left > 0 else "time's up")
        bar.set_postfix_str(", ".join(parts), refresh=False)


def _is_console(handler: logging.Handler) -> bool:
    return isinstance(handler, logging.StreamHandler) and handler.stream in (sys.stdout, sys.stderr)


class SearchProgress:
    """A search's phases (the engine's `on_phase`) and reports (`on_report`) on a Progress bar."""

    LABELS = {
        "baselines": "timing the baselines (eager, torch.compile)",
        "seeds": "proposing seed kernels",
        "confirm": "confirming the winners",
        "write": "writing the run directory",
    }

    def __init__(
        self, progress: Progress, max_evaluations: int | None, wall_clock_s: float | None, done: int = 0
    ) -> None:
        self.progress = progress
        self.max_evaluations = max_evaluations
        self.wall_clock_s = wall_clock_s
        self.evaluations = done
        self.best: float | None = None

    def phase(self, name: str) -> None:
        if name == "search":
            total = self.max_evaluations
            self.progress.phase("search", total, "evals", self.wall_clock_s, done=self.evaluations)
        else:
            self.progress.phase(self.LABELS.get(name, name))

    def report(self, node: Any) -> None:
        """One evaluation recorded (a search graph Node)."""
        self.evaluations += 1
        fitness = node.fitness
        if fitness is not None and fitness.feasible:
            self.best = max(self.best or 0.0, fitness.objective)
        status = node.report.status.value if node.report is not None else "?"
        note = f"best {self.best:.2f}x vs eager" if self.best is not None else "no correct kernel yet"
        if not self.max_evaluations:
            note = f"{self.evaluations} evals, {note}"
        self.progress.advance(note=f"{note}, last {status}")
