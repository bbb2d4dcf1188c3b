"""LLM calls per evaluated candidate on the loopback server's replayed replies (issue 38).

Two scenarios, each an LLM-only search on platform=cpu (real harness, Triton interpreter):
  mix    the mix in tests/llm_replay.py, repeating: good kernels, broken code, a repeat, prose, a reply cut
         off at the token limit (10 prompts per round); 16 evaluations (tests/test_llm_economy.py)
  stuck  four good kernels, then only repeats of the last one: what a run spends once the model has
         nothing new (the issue's 25 barren rounds of one prompt)

    python experiments/llm_economy/run.py [out.json]    # from the repository root
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SCENARIOS = {"mix": None, "stuck": ("good",) * 4 + ("repeat",) * 60}


def main() -> None:
    from tests.llm_replay import MIX
    from tests.test_llm_economy import EVALUATIONS, economy_run

    found = {}
    for name, mix in SCENARIOS.items():
        with tempfile.TemporaryDirectory() as tmp:
            run = economy_run(Path(tmp), EVALUATIONS, mix or MIX)
        run.pop("results")
        found[name] = run
        print(name, json.dumps({k: v for k, v in run.items() if k != "reply_kinds"}), flush=True)
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    main()
