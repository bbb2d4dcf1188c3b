"""KernelBench: its problems as specs (`kernelbench:1/19`), read from a checkout or a JSONL export, and
its own evaluator as a second judge of our kernels (`judge/`)."""
