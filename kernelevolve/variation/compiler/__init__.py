"""Compiler seeds: the Triton code PyTorch's Inductor writes for the reference, made a standalone candidate.

`capture` runs Inductor's code generation for the reference at one shape (without executing it);
`parse` splits the generated module into Triton kernels and host steps; `render` writes a
candidate whose ModelNew launches those kernels itself (no torch.compile at run time), with every
kernel's block sizes and warps exposed as tunables for the parameter-tuning operator.
"""
