"""Which fp32 convolution precision each kind of run uses.

PyTorch lets cuDNN run fp32 convolutions in TF32 by default (fp32 matmuls it keeps exact). At
KernelBench's fp32 tolerance (1e-4) a TF32 reference differs from an exact kernel by up to about
1e-3, so correct kernels fail and a library call that also uses TF32 passes by luck. The reference
and the candidates therefore run with exact fp32 convolutions, unless the spec names PyTorch's defaults
(`reference_precision: framework_default`, KernelBench's protocol: its evaluator runs both at the
framework's defaults, and so do we for its problems). The eager and torch.compile baselines
are timed as users run them, with PyTorch's default: that can only make our speedups smaller.
Where a reference runs convolutions on a GPU, eager is also timed at the candidates' precision
(`Baseline.eager_exact`), so a report can say how much of a gap is precision rather than kernels.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

PYTORCH_DEFAULT_CUDNN_TF32 = True


@contextlib.contextmanager
def cudnn_tf32(allowed: bool) -> Iterator[None]:
    """Within the block, cuDNN may (or may not) use TF32 for fp32 convolutions; restored after."""
    import torch

    before = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = allowed
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32 = before


EXACT_FP32 = "exact_fp32"
FRAMEWORK_DEFAULT = "framework_default"
# What the reference is checked at (`KernelSpec.reference_precision`): exact fp32, or PyTorch's own
# defaults (cuDNN may use TF32 for fp32 convolutions), which is KernelBench's protocol.
REFERENCE_PRECISIONS = (EXACT_FP32, FRAMEWORK_DEFAULT)
# A candidate's report flag where the spec checks at PyTorch's defaults and those differ from exact fp32:
# its outputs on the checked trials against the reference at exact fp32 too (KernelBench's protocol and ours
# ask different questions of TF32 convolutions; both verdicts are reported)
EXACT_FP32_CORRECT = "exact_fp32_correct"
EXACT_FP32_INCORRECT = "exact_fp32_incorrect"


def reference_precision(name: str) -> contextlib.AbstractContextManager[None]:
    """The precision the reference and the candidates run at, by its name in the spec."""
    if name == EXACT_FP32:
        return exact_fp32()
    if name == FRAMEWORK_DEFAULT:
        return cudnn_tf32(PYTORCH_DEFAULT_CUDNN_TF32)
    raise ValueError(f"unknown reference precision {name!r}; expected one of {list(REFERENCE_PRECISIONS)}")


def exact_fp32() -> contextlib.AbstractContextManager[None]:
    """For the reference and the candidates: what the fp32 tolerance is checked against."""
    return cudnn_tf32(False)


def baseline_precision() -> contextlib.AbstractContextManager[None]:
    """For the eager and torch.compile baselines: PyTorch's default, as users run them."""
    return cudnn_tf32(PYTORCH_DEFAULT_CUDNN_TF32)


def precision_differs(model: object, device: str) -> bool:
    """Would `exact_fp32` change how `model` runs? Only cuDNN convolutions on a GPU differ."""
    import torch

    if not device.startswith("cuda") or not isinstance(model, torch.nn.Module):
        return False
    return any(isinstance(m, torch.nn.modules.conv._ConvNd) for m in model.modules())
