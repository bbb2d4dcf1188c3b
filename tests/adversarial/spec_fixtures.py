"""Tiny KernelBench-form reference specs that the adversarial hacks and the known-good kernels target.

Shapes are small enough that a whole harness run under the Triton interpreter takes well under a
second. Candidate files name their spec in a header line ``# spec: <name>``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from kernelevolve.specs.built_dtype import DEFAULT_TOLERANCE, built_dtype
from kernelevolve.types import Backward, KernelSpec, Status
from tests.adversarial.kernelbench_fixtures import EVAL_MODE_SOURCES, HALF_SOURCES, TRAINING_SOURCES
from tests.adversarial.kernelbench_fixtures import SOURCES as KERNELBENCH_FORM

_HEADER = """
import torch
import torch.nn as nn
import torch.nn.functional as F
"""

RELU = (
    _HEADER
    + """

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


n = 200


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return []
"""
)

# relu on inputs that are already non-negative: returning the input is numerically right, and
# still wrong (the reference returns a new tensor).
RELU_POSITIVE = RELU.replace("torch.randn(n)", "torch.rand(n)")

SOFTMAX = (
    _HEADER
    + """

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


rows = 6
cols = 40


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
"""
)

LAYERNORM = (
    _HEADER
    + """

class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.LayerNorm(features)
        with torch.no_grad():  # non-trivial affine parameters, drawn from the seeded generator
            self.norm.weight.copy_(torch.randn(features))
            self.norm.bias.copy_(torch.randn(features))

    def forward(self, x):
        return self.norm(x)


rows = 5
features = 48


def get_inputs():
    return [torch.randn(rows, features)]


def get_init_inputs():
    return [features]
"""
)

LINEAR_RELU = (
    _HEADER
    + """

class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


batch = 20
in_features = 32
out_features = 24


def get_inputs():
    return [torch.randn(batch, in_features)]


def get_init_inputs():
    return [in_features, out_features]
"""
)

ROWSUM = (
    _HEADER
    + """

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(x, dim=1)


rows = 7
cols = 50


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
"""
)

# The whole vector's sum of squares; the size is a constructor argument so a kernel may
# pre-allocate its partial-sum buffer in __init__.
SUMSQ = (
    _HEADER
    + """

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.n = n

    def forward(self, x):
        return (x * x).sum()


n = 1000


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return [n]
"""
)

# nn.LayerNorm at its default init: weight ones, bias zeros. The harness perturbs such constant state
# (the same values in Model and ModelNew) so a kernel that ignores it cannot pass.
LAYERNORM_DEFAULT_INIT = (
    _HEADER
    + """

class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.LayerNorm(features)

    def forward(self, x):
        return self.norm(x)


rows = 6
features = 48


def get_inputs():
    return [torch.randn(rows, features)]


def get_init_inputs():
    return [features]
"""
)

# RMSNorm as a training spec: the output, the input's gradient and the weight's, from upstream gradients
RMSNORM = (
    _HEADER
    + """

class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


rows = 5
features = 48


def get_inputs():
    return [torch.randn(rows, features)]


def get_init_inputs():
    return [features]
"""
)

# KernelBench level-2 style: a convolution with a fused epilogue (an extra bias parameter, relu)
CONV_BIAS_RELU = (
    _HEADER
    + """

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1))

    def forward(self, x):
        return torch.relu(self.conv(x) + self.bias)


batch = 2
in_channels = 3
out_channels = 8
height = width = 10
kernel_size = 3


def get_inputs():
    return [torch.randn(batch, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
"""
)

# A module built (and run) in training mode: BatchNorm normalises by the batch's statistics and moves its
# running statistics, which the judge compares with the reference's after each call.
BATCHNORM_TRAIN = (
    _HEADER
    + """

class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x):
        return self.bn(x)


batch = 12
features = 20


def get_inputs():
    return [torch.randn(batch, features)]


def get_init_inputs():
    return [features]
"""
)

# An integer output of large values: the index of the maximum along long rows (each row's maximum lies far
# from index 0 under its trend), compared with the spec's float tolerance before
ARGMAX_LONG_ROWS = (
    _HEADER
    + """

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.argmax(x, dim=1)


rows = 2
n = 1 << 17


def get_inputs():
    return [torch.rand(rows, n) + torch.linspace(0.0, 1.0, n)]


def get_init_inputs():
    return []
"""
)

# A complex output: unit phasors of the input angles
POLAR = (
    _HEADER
    + """

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.polar(torch.ones_like(x), x)


n = 256


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return []
"""
)

# A module whose output reads the state its call moves (a running mean it centres by, as a QAT observer's
# running range sets the fake quantisation's scale): a timed call's output depends on every call before it
RUNNING_CENTERING = (
    _HEADER
    + """

class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.register_buffer("running_mean", torch.zeros(features))

    def forward(self, x):
        self.running_mean.mul_(0.9).add_(x.mean(0), alpha=0.1)
        return x - self.running_mean


batch = 12
features = 20


def get_inputs():
    return [torch.randn(batch, features) + 3.0]


def get_init_inputs():
    return [features]
"""
)

# The same, its buffer replaced by each call's new value rather than updated in place
RUNNING_CENTERING_REASSIGNED = RUNNING_CENTERING.replace(
    "self.running_mean.mul_(0.9).add_(x.mean(0), alpha=0.1)",
    "self.running_mean = self.running_mean * 0.9 + x.mean(0) * 0.1",
)

# One tensor passed in two argument positions (`get_inputs()` returning `[x, x]`): the aliasing is part of
# the input structure, kept on both sides of a timed call
SAME_INPUT_TWICE = (
    _HEADER
    + """

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a * torch.sigmoid(b) + 0.5 * b


batch = 12
features = 20


def get_inputs():
    x = torch.randn(batch, features)
    return [x, x]


def get_init_inputs():
    return []
"""
)

# A Python int step counter its output reads (a warm-up schedule's step): state outside tensors
STEP_COUNTER = (
    _HEADER
    + """

class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * (1.0 + 0.5 * (self.calls % 3))


batch = 12
features = 20


def get_inputs():
    return [torch.randn(batch, features)]


def get_init_inputs():
    return [features]
"""
)

# An nn.Parameter its forward moves in place (an EMA centre kept as a parameter), read by the output
EMA_PARAMETER = (
    _HEADER
    + """

class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.centre = nn.Parameter(torch.zeros(features))

    def forward(self, x):
        with torch.no_grad():
            self.centre.mul_(0.9).add_(x.mean(0), alpha=0.1)
        return x - self.centre


batch = 12
features = 20


def get_inputs():
    return [torch.randn(batch, features) + 3.0]


def get_init_inputs():
    return [features]
"""
)

# The last two batch means kept in a plain list of tensors, replaced each call, read by the output
MEANS_IN_LIST = (
    _HEADER
    + """

class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.last = [torch.zeros(features), torch.zeros(features)]

    def forward(self, x):
        m = x.mean(0)
        out = x - (self.last[0] + self.last[1] + m) / 3.0
        self.last = [self.last[1], m]
        return out


batch = 12
features = 20


def get_inputs():
    return [torch.randn(batch, features) + 3.0]


def get_init_inputs():
    return [features]
"""
)

# The same two with a weight: a reference holding parameters makes `kernel_share` leave out its stale and
# decoy calls (whose extra reference call moved the state and failed an honest kernel), so only the timed
# checks stand between a candidate and its timed calls
STEP_COUNTER_WEIGHTED = STEP_COUNTER.replace(
    "        self.calls = 0\n",
    "        self.calls = 0\n        self.weight = nn.Parameter(torch.randn(features))\n",
).replace("return x * (1.0", "return x * self.weight * (1.0")
MEANS_IN_LIST_WEIGHTED = MEANS_IN_LIST.replace(
    "        self.last = [torch",
    "        self.weight = nn.Parameter(torch.randn(features))\n        self.last = [torch",
).replace("out = x - (", "out = self.weight * x - (")

# The counter kept on the class (`Model.calls`), where no put-back reaches: an unsupported form
CLASS_COUNTER_WEIGHTED = (
    STEP_COUNTER_WEIGHTED.replace("class Model(nn.Module):\n", "class Model(nn.Module):\n    calls = 0\n\n")
    .replace("        self.calls = 0\n", "")
    .replace("self.calls += 1", "type(self).calls += 1")
)

SPECS: dict[str, KernelSpec] = {
    "rmsnorm_train": KernelSpec(
        name="adversarial_rmsnorm_train", reference_source=RMSNORM, atol=1e-4, rtol=1e-4, backward=Backward()
    )
}
SPECS |= {
    name: KernelSpec(name=f"adversarial_{name}", reference_source=source, atol=1e-4, rtol=1e-4)
    for name, source in {
        "relu": RELU,
        "relu_positive": RELU_POSITIVE,
        "softmax": SOFTMAX,
        "layernorm": LAYERNORM,
        "layernorm_default_init": LAYERNORM_DEFAULT_INIT,
        "linear_relu": LINEAR_RELU,
        "rowsum": ROWSUM,
        "sumsq": SUMSQ,
        "argmax_long_rows": ARGMAX_LONG_ROWS,
        "polar": POLAR,
        "conv_bias_relu": CONV_BIAS_RELU,
        "batchnorm_train": BATCHNORM_TRAIN,
        "running_centering": RUNNING_CENTERING,
        "running_centering_reassigned": RUNNING_CENTERING_REASSIGNED,
        "same_input_twice": SAME_INPUT_TWICE,
        "step_counter": STEP_COUNTER,
        "ema_parameter": EMA_PARAMETER,
        "means_in_list": MEANS_IN_LIST,
        "step_counter_weighted": STEP_COUNTER_WEIGHTED,
        "means_in_list_weighted": MEANS_IN_LIST_WEIGHTED,
        "class_counter_weighted": CLASS_COUNTER_WEIGHTED,
        **KERNELBENCH_FORM,
    }.items()
}
# Built in training mode, switched to eval by the spec: BatchNorm by its running statistics, Dropout off
SPECS |= {
    name: KernelSpec(name=f"adversarial_{name}", reference_source=source, atol=1e-4, rtol=1e-4, mode="eval")
    for name, source in EVAL_MODE_SOURCES.items()
}
SPECS |= {
    name: KernelSpec(
        name=f"adversarial_{name}", reference_source=source, atol=1e-4, rtol=1e-4, backward=Backward()
    )
    for name, source in TRAINING_SOURCES.items()
}
# KernelBench problems built in fp16/bf16: the dtype read from the inputs, KernelBench's 1e-2 tolerance
SPECS |= {
    name: KernelSpec(
        name=f"adversarial_{name}",
        reference_source=source,
        dtype=(dtype := built_dtype(source)),
        atol=DEFAULT_TOLERANCE[dtype],
        rtol=DEFAULT_TOLERANCE[dtype],
    )
    for name, source in HALF_SOURCES.items()
}


# A header may name a shipped spec as `shipped:<name>` (operators/spec/<name>.yaml at its CPU shapes):
# honest kernels for the workloads users bring (bf16, integer inputs, tuples of outputs, training specs).
SHIPPED = "shipped:"


def is_spec(name: str) -> bool:
    if name.startswith(SHIPPED):
        from kernelevolve.specs.loading import shipped_spec_names

        return name.removeprefix(SHIPPED) in shipped_spec_names()
    return name in SPECS


def spec(name: str) -> KernelSpec:
    if name.startswith(SHIPPED):
        return _shipped(name.removeprefix(SHIPPED))
    if name not in SPECS:
        raise KeyError(
            f"unknown adversarial spec {name!r}; valid: {', '.join(sorted(SPECS))} or shipped:NAME"
        )
    return SPECS[name]


@cache
def _shipped(name: str) -> KernelSpec:
    from kernelevolve.platforms import load_platform
    from kernelevolve.specs.loading import resolve_spec

    return resolve_spec(name, load_platform("cpu"), validate=False)


# ---------------------------------------------------------------------------------------------
# Candidate files: tests/adversarial/{hacks,good}/*.py with a header of "# key: value" lines.

HERE = Path(__file__).parent
_KEYS = (
    "hack",
    "good",
    "spec",
    "expect",
    "expect-gpu",
    "runtime",
    "runtime-gpu",
    "strict",
    "requires",
    "known-issue",
    "known-issue-on",
    "backend",
    "run",
)


@dataclass(frozen=True)
class CandidateCase:
    """One candidate file and what its header says must happen to it."""

    path: Path
    source: str
    header: dict[str, str]

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def spec_name(self) -> str:
        return self.header["spec"]

    @property
    def strict(self) -> bool:
        return self.header.get("strict", "true").lower() != "false"

    @property
    def backend(self) -> str:
        return self.header.get("backend", "triton")

    def on_gpu(self) -> CandidateCase:
        """The case as judged on a GPU: `expect-gpu:` (where a CPU-only door meets the device: a NumPy
        view of host memory handed to a CUDA launch) in place of `expect:`."""
        if "expect-gpu" not in self.header:
            return self
        return dataclasses.replace(self, header={**self.header, "expect": self.header["expect-gpu"]})

    @property
    def expected_status(self) -> Status:
        return Status(self.header.get("expect", "ok").split()[0])

    @property
    def expected_detail(self) -> frozenset[str]:
        """The static check code (rejected_static) or correctness check name (incorrect) that must be named."""
        parts = self.header.get("expect", "ok").split()
        return frozenset(parts[1].split("|")) if len(parts) > 1 else frozenset()

    @property
    def runtime_verdict(self) -> tuple[Status, frozenset[str]] | None:
        return self.runtime_verdict_on(gpu=False)

    def runtime_verdict_on(self, gpu: bool) -> tuple[Status, frozenset[str]] | None:
        """The verdict with the static checks switched off (what the judge and runner alone decide), from
        `runtime-gpu:` on a GPU, else `runtime:`, else `expect:` where that is not a static rejection;
        None for `skip`."""
        text = (
            (self.header.get("runtime-gpu") if gpu else None)
            or self.header.get("runtime")
            or self.header.get("expect", "ok")
        )
        words = text.split()
        if words[0] == "skip":
            return None
        status = Status(words[0])
        if status is Status.REJECTED_STATIC:
            raise ValueError(
                f"{self.path}: a static rejection needs a `runtime:` line (the verdict without it)"
            )
        named = len(words) > 1 and status is not Status.OK and not words[1].startswith("(")
        return status, frozenset(words[1].split("|")) if named else frozenset()

    @property
    def needs_gpu(self) -> bool:
        return self.header.get("requires") == "gpu"

    @property
    def runnable(self) -> bool:
        return self.header.get("run") != "static-only"

    @property
    def known_issue(self) -> str:
        """Why the harness currently gets this case wrong (its test is a strict xfail until fixed)."""
        return self.header.get("known-issue", "")

    @property
    def known_issue_where(self) -> str:
        """Where the known issue shows: "cpu" (the Triton interpreter), "gpu" or "both" (the default)."""
        return self.header.get("known-issue-on", "both")


def _parse_header(source: str) -> dict[str, str]:
    header: dict[str, str] = {}
    key = ""
    for line in source.splitlines():
        if not line.startswith("#"):
            break
        text = line.lstrip("#").strip()
        head, _, value = text.partition(":")
        if head in _KEYS and value:
            key = head
            header[key] = value.strip()
        elif key:
            header[key] += " " + text
    return header


def load_cases(kind: str) -> list[CandidateCase]:
    """All candidate files of one kind ("hacks" or "good"), sorted by name."""
    if kind not in ("hacks", "good"):
        raise ValueError(f"unknown case kind {kind!r}; valid: hacks, good")
    cases = []
    for path in sorted((HERE / kind).glob("*.py")):
        source = path.read_text()
        header = _parse_header(source)
        missing = [k for k in ("spec", "expect" if kind == "hacks" else "good") if k not in header]
        if missing:
            raise ValueError(f"{path}: header lacks {missing}")
        cases.append(CandidateCase(path, source, header))
    return cases
