"""Turn an LLM reply into candidate source, or say precisely why it cannot be used.

Replies come as one fenced module (the format we ask for), several fenced blocks (helpers
first, then `ModelNew`), bare code with prose around it, or SEARCH/REPLACE edits against the
parent. Reasoning models may prefix a <think>...</think> section, which is dropped.
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE_OPEN = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+.-]*)[^\n]*$", re.MULTILINE)
_MODELNEW = re.compile(r"^[ \t]*class[ \t]+ModelNew\b", re.MULTILINE)
_EDIT = re.compile(
    r"^[ \t]*<{5,9}[ \t]*SEARCH[ \t]*\n(.*?)^[ \t]*={5,9}[ \t]*\n(.*?)^[ \t]*>{5,9}[ \t]*REPLACE[ \t]*$",
    re.DOTALL | re.MULTILINE,
)
_EDIT_MARKER = re.compile(r"^[ \t]*<{5,9}[ \t]*SEARCH", re.MULTILINE)
_CODE_START = re.compile(r"^(import |from |@|def |class |#|[A-Za-z_][\w.]*[ \t]*=)")
_PYTHON_LANGS = {"", "python", "py", "python3", "triton", "cute"}
_BUILTINS = set(dir(builtins))


@dataclass(frozen=True)
class ParsedReply:
    source: str
    how: str  # "fenced", "fenced+helpers", "unfenced", "edits"
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ParseFailure:
    reason: str


@dataclass(frozen=True)
class CodeBlock:
    lang: str
    code: str
    closed: bool  # False when the reply ended inside the block (e.g. cut off by max_tokens)


class EditError(ValueError):
    pass


def strip_reasoning(text: str) -> str:
    text = _THINK.sub("", text)
    # A lone closing tag means the opening one was consumed by the server's chat template.
    if "</think>" in text and "<think>" not in text:
        text = text.split("</think>", 1)[1]
    return text


def extract_code_blocks(text: str) -> list[CodeBlock]:
    """Fenced blocks in order; the closing fence must match the opening one's character and length."""
    blocks: list[CodeBlock] = []
    pos = 0
    while True:
        match = _FENCE_OPEN.search(text, pos)
        if match is None:
            return blocks
        fence, lang = match.group(1), match.group(2).lower()
        body_start = match.end() + 1
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        end = closing.search(text, body_start)
        if end is None:
            blocks.append(CodeBlock(lang, text[body_start:], closed=False))
            return blocks
        blocks.append(CodeBlock(lang, text[body_start : end.start()], closed=True))
        pos = end.end()


def parse_edit_blocks(text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in _EDIT.finditer(text)]


def _loose(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def apply_edits(source: str, edits: list[tuple[str, str]]) -> str:
    """Apply SEARCH/REPLACE pairs in order; each SEARCH must match exactly one place."""
    for number, (search, replace) in enumerate(edits, start=1):
        if not search.strip():
            raise EditError(f"edit {number} has an empty SEARCH section")
        count = source.count(search)
        if count == 1:
            source = source.replace(search, replace, 1)
            continue
        if count > 1:
            raise EditError(
                f"edit {number}: SEARCH text occurs {count} times in the parent; it must be unique"
            )
        # Models often drop trailing blanks or the final newline; retry on normalised lines.
        loose_source, loose_search = _loose(source), _loose(search)
        if loose_search and loose_source.count(loose_search) == 1:
            source = loose_source.replace(loose_search, _loose(replace), 1) + "\n"
            continue
        first = search.strip().splitlines()[0][:80]
        raise EditError(f"edit {number}: SEARCH text not found in the parent (first line: {first!r})")
    return source


def _tree(code: str) -> ast.Module | None:
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError):
        return None


def _defined(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def _used(tree: ast.Module) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _merge_helpers(blocks: list[str], chosen: int) -> tuple[str, int]:
    """The chosen block plus earlier blocks that define names it uses but does not define."""
    tree = _tree(blocks[chosen])
    if tree is None:
        return blocks[chosen], 0
    needed = _used(tree) - _defined(tree) - _BUILTINS
    keep: list[int] = []
    for index in range(chosen - 1, -1, -1):
        helper = _tree(blocks[index])
        if helper is None or not needed:
            continue
        defined = _defined(helper)
        if defined & needed:
            keep.append(index)
            needed = (needed | (_used(helper) - _BUILTINS)) - defined
    parts = [blocks[i].strip("\n") for i in sorted(keep)] + [blocks[chosen].strip("\n")]
    return "\n\n\n".join(parts) + "\n", len(keep)


def _unfenced(text: str) -> ParsedReply | ParseFailure:
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _CODE_START.match(line)), None)
    if start is None:
        return ParseFailure("reply has no code block and no recognisable Python code")
    body = lines[start:]
    # Drop trailing prose line by line until the module parses (bounded: prose tails are short).
    for end in range(len(body), max(0, len(body) - 40), -1):
        code = "\n".join(body[:end])
        if _MODELNEW.search(code) is None:
            break
        if _tree(code) is not None:
            return ParsedReply(code.rstrip() + "\n", "unfenced")
    return ParsedReply("\n".join(body).rstrip() + "\n", "unfenced", ("does not parse as Python",))


def _has_modelnew(source: str) -> bool:
    tree = _tree(source)
    if tree is None:
        return _MODELNEW.search(source) is not None
    return any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body)


def parse_reply(text: str, parent_source: str | None = None) -> ParsedReply | ParseFailure:
    """Candidate source from a reply; `parent_source` is needed only for SEARCH/REPLACE edits."""
    text = strip_reasoning(text or "")
    if not text.strip():
        return ParseFailure("empty reply")

    if _EDIT_MARKER.search(text):
        edits = parse_edit_blocks(text)
        if not edits:
            return ParseFailure("reply opens a SEARCH/REPLACE edit but no complete edit block was found")
        if parent_source is None:
            return ParseFailure("reply uses SEARCH/REPLACE edits but there is no parent source to edit")
        try:
            source = apply_edits(parent_source, edits)
        except EditError as exc:
            return ParseFailure(str(exc))
        if not _has_modelnew(source):
            return ParseFailure("after applying the edits the source no longer defines class ModelNew")
        return ParsedReply(source, "edits", (f"{len(edits)} edit(s)",))

    blocks = [b for b in extract_code_blocks(text) if b.lang in _PYTHON_LANGS]
    if not blocks:
        if _MODELNEW.search(text) is None:
            return ParseFailure("reply has no code block and does not define class ModelNew")
        parsed = _unfenced(text)
        if isinstance(parsed, ParsedReply) and not _has_modelnew(parsed.source):
            return ParseFailure("reply's code does not define class ModelNew at module level")
        return parsed

    with_model = [i for i, b in enumerate(blocks) if _MODELNEW.search(b.code)]
    if not with_model:
        return ParseFailure(f"none of the reply's {len(blocks)} code block(s) defines class ModelNew")
    chosen = with_model[-1]  # when a reply revises itself, the last version is its answer
    if not blocks[chosen].closed and _tree(blocks[chosen].code) is None:
        return ParseFailure("reply was cut off inside its code block (raise llm.max_tokens?)")
    source, helpers = _merge_helpers([b.code for b in blocks], chosen)
    if not _has_modelnew(source):
        return ParseFailure("class ModelNew is not defined at module level")
    notes: list[str] = []
    if _tree(source) is None:
        notes.append("does not parse as Python")
    if not blocks[chosen].closed:
        notes.append("unclosed code block")
    return ParsedReply(source, "fenced+helpers" if helpers else "fenced", tuple(notes))
