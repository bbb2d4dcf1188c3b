"""Work-reducing rewrites of a reference, exact up to float rounding, for the rewrite-seed operator.

Pipeline: `trace` (the reference at one shape as an FX graph of torch calls, shapes propagated on
meta tensors) -> rules (`linear_fold`: a sum or mean over a linear layer's output features becomes a
matrix-vector product; `conv_fold`: a global spatial sum or mean after a convolution becomes window
sums of the input and a small product with the weight; `identities`: reductions over size-1
dimensions and `a - a`) applied to a fixpoint by `pipeline.rewrite_reference` -> `source` (the
reference with `Model.forward` replaced by the rewritten graph's code, `__init__` untouched, so the
parameters are the reference's). The rewritten reference is specialised to the traced shape.
"""

from __future__ import annotations

from kernelevolve.variation.rewrite.pipeline import RULES, Rewritten, rewrite_reference

__all__ = ["RULES", "Rewritten", "rewrite_reference"]
