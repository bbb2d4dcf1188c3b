"""The joint capture's check that the forward saves what the backward takes, in order."""

from __future__ import annotations

import pytest
import torch
import torch.fx as fx

from kernelevolve.variation.compiler.joint_capture import CaptureError, _layout


def _graph_module(placeholders: list[str], returned: list[str]) -> fx.GraphModule:
    graph = fx.Graph()
    nodes = {}
    for name in placeholders:
        node = graph.placeholder(name)
        node.meta["val"] = torch.empty(4)
        nodes[name] = node
    graph.output(tuple(nodes[name] for name in returned))
    return fx.GraphModule(torch.nn.Module(), graph)


def test_saved_values_in_order_give_the_layout() -> None:
    forward = _graph_module(["x", "amax", "lse"], ["x", "amax", "lse"])
    backward = _graph_module(["amax", "lse", "tangents_1"], ["amax"])
    assert _layout(forward, backward, 1) == (1, 2, 1)


def test_saved_values_out_of_order_are_refused_with_both_lists_named() -> None:
    forward = _graph_module(["x", "amax", "lse"], ["x", "amax", "lse"])
    backward = _graph_module(["lse", "amax", "tangents_1"], ["lse"])
    with pytest.raises(
        CaptureError, match=r"saves \['amax', 'lse'\], the backward takes \['lse', 'amax', 'tangents_1'\]"
    ):
        _layout(forward, backward, 1)
