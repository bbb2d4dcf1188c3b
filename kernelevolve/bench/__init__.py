"""Benchmarks: KernelBench's problems, its evaluator as a second judge, and sweeps over many problems.

Nothing outside this package imports it; it plugs into the core through entry points (pyproject.toml:
`kernelevolve.spec_sources`, `kernelevolve.judges`, `kernelevolve.reports`), so the core runs without it.
"""
