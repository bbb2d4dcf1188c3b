"""The before/after table of the README from the two profile_locked.py JSON files in this folder."""

import json
from pathlib import Path

here = Path(__file__).parent
before = {r["problem"]: r for r in json.loads((here / "profile_locked_before_8c55aa2.json").read_text())}
after = {r["problem"]: r for r in json.loads((here / "profile_locked_after_4e74eeb.json").read_text())}
print("| problem | value check ms/trial: before -> after | correctness s/eval | timing s/eval | locked s/eval |")
print("|---|---|---|---|---|")
for key, new in after.items():
    old = before[key]
    steps_old, steps_new = old["trial_steps_s"], new["trial_steps_s"]
    run_old, run_new = old["harness"][1]["phase_s"], new["harness"][1]["phase_s"]  # the second, warm run

    def locked(phases: dict) -> float:
        return sum(phases.get(k, 0.0) for k in ("build", "correctness", "reference", "timing"))

    print(
        f"| {key} {new['name'].removeprefix('kb_')[:28]} | {1e3 * steps_old['value_check']:.1f} -> "
        f"{1e3 * steps_new['value_check']:.1f} | {run_old['correctness']:.2f} -> {run_new['correctness']:.2f} | "
        f"{run_old['timing']:.2f} -> {run_new['timing']:.2f} | {locked(run_old):.2f} -> {locked(run_new):.2f} |"
    )
