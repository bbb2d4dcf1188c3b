"""KernelBench sweeps: one search per problem, resumable, with summaries in KernelBench's terms.

python -m kernelevolve.bench.sweep --help
"""
