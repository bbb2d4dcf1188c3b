"""A model that replays recorded replies, for the loopback server: what the LLM economy is measured on.

Like a recording made at temperature 0, the same prompt always gets the same reply; each new prompt
takes the next reply of a fixed mix, whatever it asks: good kernels (each a new variant), broken
code (a compile error and a wrong result), a repeat of an earlier kernel, a reply in prose, and a
long reply that a server limit of `MAX_TOKENS` words cuts off (and that fits in twice as many).

    model = ReplayModel()
    with LoopbackLLMServer(model) as server: ...
    model.kinds  # the kind of each distinct prompt's reply, in order
"""

from __future__ import annotations

import itertools
import json
import threading
from typing import Any

try:
    from llm_server import KERNEL, fenced
except ImportError:  # tests/ imported as a package
    from tests.llm_server import KERNEL, fenced

MAX_TOKENS = 300  # llm.max_tokens for runs on this model: the long reply needs two requests
# One round of the mix; it repeats with new variants. Per round: 10 prompts, 11 requests (the long
# reply is asked twice), 8 replies worth evaluating (good, broken, long).
MIX = ("good", "broken", "good", "repeat", "good", "prose", "good", "long", "wrong", "good")
_BLOCKS = (128, 256, 512, 2048, 4096, 64, 32, 8192)


def variant(number: int) -> str:
    """A correct kernel, different in code for every number (block size and a tile constant)."""
    block = _BLOCKS[number % len(_BLOCKS)]
    source = KERNEL.replace("triton.cdiv(n, 1024)", f"triton.cdiv(n, {block})").replace(
        "BLOCK=1024", f"BLOCK={block}"
    )
    return source.replace("class ModelNew", f"TILE_VARIANT = {number}\n\n\nclass ModelNew", 1)


def _broken(number: int) -> str:
    return variant(number).replace("out = torch.empty_like(x)", "out = torch.empty_like(x_missing)")


def _wrong(number: int) -> str:
    return variant(number).replace("tl.maximum(x, 0.0) * scale", "tl.maximum(x, 0.0) * scale + 1.0")


class ReplayModel:
    def __init__(self, mix: tuple[str, ...] = MIX) -> None:
        self.mix = mix
        self._kinds = itertools.cycle(mix)
        self._numbers = itertools.count()
        self._lock = threading.Lock()
        self._by_prompt: dict[str, str] = {}
        self.kinds: list[str] = []
        self._last_good = ""

    def _next_reply(self) -> str:
        kind = next(self._kinds)
        number = next(self._numbers)
        self.kinds.append(kind)
        if kind == "good":
            self._last_good = variant(number)
            return fenced(self._last_good, f"Block size variant {number}.")
        if kind == "broken":
            return fenced(_broken(number), "Allocate the output once.")
        if kind == "wrong":
            return fenced(_wrong(number), "Fold the scale into the store.")
        if kind == "repeat":  # an earlier kernel again, reformatted, with new prose
            again = self._last_good.replace("    mask = offs < n", "    mask = (offs < n)  # bounds")
            return fenced(again, "A fresh idea: tune the block size.")
        if kind == "prose":
            return "To speed this up, fuse the ReLU and the scale and use a larger block. Hope this helps!"
        # long: the explanation pushes the code past MAX_TOKENS words
        explanation = "Reasoning about the memory traffic of this kernel in detail. " * 30
        return fenced(variant(number), explanation.strip())

    def __call__(self, body: dict[str, Any]) -> str:
        key = json.dumps(body["messages"], sort_keys=True)
        with self._lock:
            if key not in self._by_prompt:
                self._by_prompt[key] = self._next_reply()
            return self._by_prompt[key]
