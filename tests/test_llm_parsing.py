"""Reply parsing: fenced, multi-block, unfenced, SEARCH/REPLACE edits, and clear failures."""

from __future__ import annotations

import ast

import pytest

from kernelevolve.llm.parsing import (
    EditError,
    ParsedReply,
    ParseFailure,
    apply_edits,
    extract_code_blocks,
    parse_reply,
)

MODULE = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return helper(x)
"""

HELPER = """import triton


def helper(x):
    return x
"""


def _ok(result: ParsedReply | ParseFailure) -> ParsedReply:
    assert isinstance(result, ParsedReply), getattr(result, "reason", result)
    return result


def _fail(result: ParsedReply | ParseFailure) -> str:
    assert isinstance(result, ParseFailure), result
    return result.reason


def test_single_fenced_block() -> None:
    reply = f"Idea: fuse it.\n\n```python\n{MODULE}```\nThat is all."
    parsed = _ok(parse_reply(reply))
    assert parsed.source == MODULE and parsed.how == "fenced" and parsed.notes == ()


def test_unlabelled_and_tilde_fences() -> None:
    assert _ok(parse_reply(f"```\n{MODULE}```")).source == MODULE
    assert _ok(parse_reply(f"~~~py\n{MODULE}~~~")).source == MODULE


def test_last_modelnew_block_wins() -> None:
    first = MODULE.replace("helper(x)", "x + 1")
    reply = f"Draft:\n```python\n{first}```\nBetter:\n```python\n{MODULE}```"
    parsed = _ok(parse_reply(reply))
    assert "helper(x)" in parsed.source and "x + 1" not in parsed.source


def test_helper_blocks_before_modelnew_are_merged() -> None:
    unrelated = "def unused():\n    return 0\n"
    reply = f"```python\n{HELPER}```\n```bash\npip install triton\n```\n```python\n{unrelated}```\n```python\n{MODULE}```"
    parsed = _ok(parse_reply(reply))
    assert parsed.how == "fenced+helpers"
    assert "def helper" in parsed.source and "def unused" not in parsed.source
    assert "pip install" not in parsed.source
    assert parsed.source.index("def helper") < parsed.source.index("class ModelNew")
    ast.parse(parsed.source)


def test_helpers_needed_by_helpers_are_merged_too() -> None:
    base = "BLOCK = 128\n"
    helper = "def helper(x):\n    return x * BLOCK\n"
    parsed = _ok(parse_reply(f"```python\n{base}```\n```python\n{helper}```\n```python\n{MODULE}```"))
    assert "BLOCK = 128" in parsed.source and "def helper" in parsed.source


def test_reasoning_section_is_ignored() -> None:
    reply = f"<think>maybe ```python\nclass ModelNew: pass\n``` no</think>\n```python\n{MODULE}```"
    assert _ok(parse_reply(reply)).source == MODULE
    # Servers whose chat template opens the think block leave only its end in the reply.
    assert _ok(parse_reply(f"class ModelNew thoughts...</think>\n```python\n{MODULE}```")).source == MODULE


def test_unfenced_reply_with_prose_around_it() -> None:
    reply = f"Sure, here is the code:\n{MODULE}\nThis should be faster because it fuses."
    parsed = _ok(parse_reply(reply))
    assert parsed.how == "unfenced"
    assert parsed.source.startswith("import torch") and "faster because" not in parsed.source
    ast.parse(parsed.source)


def test_missing_modelnew_is_a_failure_with_reason() -> None:
    assert "defines class ModelNew" in _fail(parse_reply("```python\nclass Model:\n    pass\n```"))
    assert "no code block" in _fail(parse_reply("I cannot help with that."))
    assert _fail(parse_reply("")) == "empty reply"
    # A class called ModelNewer is not ModelNew.
    assert "ModelNew" in _fail(parse_reply("```python\nclass ModelNewer:\n    pass\n```"))


def test_nested_modelnew_is_not_module_level() -> None:
    reply = "```python\ndef make():\n    class ModelNew:\n        pass\n    return ModelNew\n```"
    assert "module level" in _fail(parse_reply(reply))


def test_truncated_reply_is_a_failure() -> None:
    reply = "```python\n" + MODULE + "\n\nclass Extra(\n    def"
    assert "cut off" in _fail(parse_reply(reply))


def test_unclosed_block_that_parses_is_kept_with_a_note() -> None:
    parsed = _ok(parse_reply("```python\n" + MODULE))
    assert parsed.source.strip() == MODULE.strip() and "unclosed code block" in parsed.notes


def test_syntax_error_is_kept_for_the_harness_to_report() -> None:
    broken = MODULE.replace("return helper(x)", "return helper(x")
    parsed = _ok(parse_reply(f"```python\n{broken}```"))
    assert "does not parse as Python" in parsed.notes


def test_search_replace_edits_apply_to_the_parent() -> None:
    reply = (
        "Use a larger block.\n```python\n<<<<<<< SEARCH\n        return helper(x)\n=======\n"
        "        return helper(x * 2)\n>>>>>>> REPLACE\n```\n"
        "<<<<<<< SEARCH\nimport torch\n=======\nimport math\nimport torch\n>>>>>>> REPLACE\n"
    )
    parsed = _ok(parse_reply(reply, parent_source=MODULE))
    assert parsed.how == "edits" and parsed.notes == ("2 edit(s)",)
    assert "return helper(x * 2)" in parsed.source and parsed.source.startswith("import math\nimport torch")


def test_edit_failures_say_why() -> None:
    missing = "<<<<<<< SEARCH\n    return nothing\n=======\n    return x\n>>>>>>> REPLACE\n"
    assert "not found in the parent" in _fail(parse_reply(missing, MODULE))
    assert "no parent source" in _fail(parse_reply(missing))
    twice = MODULE + "\n# super().__init__()\n"
    repeated = "<<<<<<< SEARCH\nsuper().__init__()\n=======\npass\n>>>>>>> REPLACE\n"
    assert "occurs 2 times" in _fail(parse_reply(repeated, twice))
    renamed = (
        "<<<<<<< SEARCH\nclass ModelNew(nn.Module):\n=======\nclass Other(nn.Module):\n>>>>>>> REPLACE\n"
    )
    assert "no longer defines class ModelNew" in _fail(parse_reply(renamed, MODULE))
    assert "no complete edit block" in _fail(parse_reply("<<<<<<< SEARCH\nfoo\n", MODULE))


def test_edits_tolerate_trailing_whitespace_differences() -> None:
    edits = [
        (
            "    def forward(self, x):   \n        return helper(x)",
            "    def forward(self, x):\n        return x",
        )
    ]
    result = apply_edits(MODULE, edits)
    assert "return x\n" in result and "helper" not in result
    with pytest.raises(EditError, match="empty SEARCH"):
        apply_edits(MODULE, [("  \n", "x")])


def test_extract_code_blocks_keeps_languages_and_order() -> None:
    blocks = extract_code_blocks("a\n```python\nx = 1\n```\nb\n````text\n```inner```\n````\n```py\ny = 2")
    assert [(b.lang, b.code, b.closed) for b in blocks] == [
        ("python", "x = 1\n", True),
        ("text", "```inner```\n", True),
        ("py", "y = 2", False),
    ]
