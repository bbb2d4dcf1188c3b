"""A ranged spec's exported op dispatches by the buckets its shape cases recorded: a call whose sizes fall
in a case's bucket is tried on (then served by) that case's kernel, one outside every bucket takes the
reference; reloaded from the store it routes the same. Specs without ranges keep power-of-two buckets."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from kernelevolve.export.custom_op import KernelOp, interpreter_ready  # noqa: E402
from kernelevolve.export.drop_in import served_module  # noqa: E402
from kernelevolve.export.loader import load_kernel_class  # noqa: E402
from kernelevolve.export.range_buckets import range_layouts  # noqa: E402
from kernelevolve.export.store import ALL_SHAPES, Artifact, ArtifactStore  # noqa: E402
from kernelevolve.platforms import load_platform  # noqa: E402
from kernelevolve.specs import reference  # noqa: E402
from kernelevolve.specs.loading import spec_from_mapping  # noqa: E402
from kernelevolve.types import KernelSpec  # noqa: E402
from tests.conftest import ADD_REFERENCE  # noqa: E402

pytestmark = pytest.mark.skipif(
    not interpreter_ready(), reason="triton imported in compiled mode; needs TRITON_INTERPRET=1"
)
# n: {range: [16, 1024]} -> cases n16, n128, n1024 with buckets [16, 45], [46, 362], [363, 1024]
RANGED = [{"name": "v", "n": {"range": [16, 1024]}}]
# (size, paths of two calls): in a bucket, tried once then served; outside every bucket, the reference
# (10 shares n16's power-of-two bucket and 300 none: the recorded buckets decide, not powers of two).
IN_AND_OUT = [
    (16, ["kernel:v_n16", "kernel:v_n16"]),
    (30, ["trial:v_n16", "kernel:v_n16"]),
    (300, ["trial:v_n128", "kernel:v_n128"]),
    (700, ["trial:v_n1024", "kernel:v_n1024"]),
    (10, ["reference", "reference"]),
    (1100, ["reference", "reference"]),
]


@pytest.fixture(autouse=True)
def cache(tmp_path: Path) -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KERNELEVOLVE_CACHE", str(tmp_path))
        yield tmp_path


def _spec(shapes: list[dict[str, Any]], source: str = ADD_REFERENCE) -> KernelSpec:
    data = {"name": "ranged_add", "reference_code": source, "shapes": shapes}
    return spec_from_mapping(data, base_dir=Path("."), origin="test", platform=load_platform("cpu"))


def _artifact(spec: KernelSpec, shape: str, source: str) -> Artifact:
    return Artifact(spec.key, spec.name, "cpu", "triton", shape, source, f"hand-{shape}", spec)


def _paths(op: Any, calls: list[tuple[int, list[str]]]) -> list[str]:
    """The path that served each call (two per size), every result checked against the reference."""
    served = []
    for n, paths in calls:
        for _ in paths:
            x, y = torch.randn(n), torch.randn(n)
            torch.testing.assert_close(op(x, y), x + y)
            served.append(op.calls[-1] if isinstance(op, KernelOp) else op.kernelevolve_dispatcher.calls[-1])
    return served


def _expected(calls: list[tuple[int, list[str]]]) -> list[str]:
    return [path for _, paths in calls for path in paths]


def test_layouts_read_sizes_from_the_inputs_each_case_makes() -> None:
    """Sizes are read where the reference puts them (any axis, scaled, in products), never by name."""
    source = ADD_REFERENCE.replace(
        "return [torch.randn(n), torch.randn(n)]", "return [torch.randn(2, n, 8), torch.randn(4 * n)]"
    ).replace("x + y", "x + y.view(2, -1, 8)")
    spec = _spec([{"name": "v", "n": {"range": [16, 1024]}}], source)
    layouts = range_layouts(spec)
    assert [layout.shape for layout in layouts] == ["v_n16", "v_n128", "v_n1024"]

    def sig(n: int, flat: int | None = None) -> Any:
        return (((2, n, 8), "torch.float32"), ((flat or 4 * n,), "torch.float32"))

    middle = layouts[1]
    assert middle.sizes(sig(300)) == {"n": 300} and middle.contains(sig(300))
    assert not middle.contains(sig(400)) and layouts[2].contains(sig(400))  # 400 is past 362
    assert middle.sizes(sig(300, flat=1201)) is None  # inputs no size of n makes
    # A dimension that is no multiple of n (n + 1) cannot be read back: power-of-two buckets instead.
    shifted = _spec(RANGED, ADD_REFERENCE.replace("torch.randn(n)", "torch.randn(n + 1)"))
    assert range_layouts(shifted) == ()
    assert range_layouts(_spec([{"name": "fixed", "n": 64}])) == ()


def test_a_ranged_op_serves_each_bucket_from_its_cases_kernel_and_reloads_the_same(
    add_kernel: Callable[..., str], tmp_path: Path
) -> None:
    spec = _spec(RANGED)
    # a kernel per case, each a different source, so the record shows whose kernel served
    artifacts = [
        _artifact(spec, s.name, add_kernel(result=f"x + y + 0 * {i}")) for i, s in enumerate(spec.shapes)
    ]
    op = KernelOp.from_artifacts(artifacts)
    assert not op.disabled
    assert _paths(op, IN_AND_OUT) == _expected(IN_AND_OUT)
    with torch.no_grad():  # another dtype is outside every bucket
        op(torch.randn(300).double(), torch.randn(300).double())
    assert op.calls[-1] == "reference"

    store = ArtifactStore(tmp_path / "artifacts.sqlite")
    assert all(store.add(a) for a in artifacts)
    again = KernelOp.from_store(spec.name, "cpu", store)
    assert [s.bucket for s in again.spec.shapes] == [s.bucket for s in spec.shapes]
    assert _paths(again, IN_AND_OUT) == _expected(IN_AND_OUT)


def test_one_kernel_for_every_shape_serves_the_buckets_only_where_it_matches(
    add_kernel: Callable[..., str],
) -> None:
    spec = _spec(RANGED)
    op = KernelOp.from_artifacts([_artifact(spec, ALL_SHAPES, add_kernel())])
    assert _paths(op, IN_AND_OUT) == _expected(IN_AND_OUT)
    # a kernel right at its own size only: its bucket's first call is checked, then the reference serves it
    wrong = add_kernel(result="x + y + (n != 128)")
    op = KernelOp.from_artifacts([_artifact(spec, "v_n128", wrong)])
    calls = [(128, ["kernel:v_n128"]), (300, ["trial:v_n128", "reference"])]
    assert _paths(op, calls) == _expected(calls)
    assert "differs" in op.dispatcher.reasons[(0, (((300,), "torch.float32"),) * 2)]


def test_the_drop_in_serves_the_recorded_buckets(add_kernel: Callable[..., str]) -> None:
    spec = _spec(RANGED)
    shapes = {s.name: s for s in spec.shapes}

    def namespace_for(shape: str) -> Any:
        module = reference.load_reference(spec.reference_source)
        reference.apply_shape(module, shapes[shape])
        return module

    def reference_model(device: str) -> Any:
        module = namespace_for(spec.shapes[0].name)
        return reference.build_model(module.Model, module, 0, device, torch.float32)

    model = load_kernel_class(add_kernel(), "triton", "cpu")()
    fast = served_module(model, spec, "cpu", namespace_for, reference_model)
    calls = [
        (128, ["kernel:best"]),
        (300, ["trial:best", "kernel:best"]),
        (10, ["reference"]),
        (1100, ["reference"]),
    ]
    assert _paths(fast, calls) == _expected(calls)


def test_specs_without_ranges_keep_power_of_two_buckets(add_kernel: Callable[..., str]) -> None:
    """An unranged spec, and the unranged entry of a mixed one, route as before the buckets."""
    spec = _spec([{"name": "n64", "n": 64}, {"name": "n100", "n": 100}])
    op = KernelOp.from_artifacts([_artifact(spec, ALL_SHAPES, add_kernel())])
    calls = [(60, ["trial:n64", "kernel:n64"]), (120, ["trial:n100"]), (300, ["reference"])]
    assert _paths(op, calls) == _expected(calls)
    mixed = _spec([{"name": "fixed", "n": 2000}, *RANGED])
    op = KernelOp.from_artifacts([_artifact(mixed, ALL_SHAPES, add_kernel())])
    calls = [(1900, ["trial:fixed"]), (300, ["trial:v_n128"]), (3000, ["reference"])]
    assert _paths(op, calls) == _expected(calls)
