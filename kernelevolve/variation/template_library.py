"""The LLM-free template library: hand-written kernels shipped as package data.

Every template is a complete candidate source (it defines ``ModelNew``) kept under
``kernelevolve/variation/templates/<backend>/<name>.py``. Its first lines carry a header

    # kernelevolve-template: name=softmax_rowwise family=softmax backend=triton

(``seed_precisions=tf32`` may follow: FP32_PRECISION values also seeded on GPU platforms; ``training=true``
marks a forward + backward kernel, the kind a training spec is served), and its
tunables are module-level constants with a ``# tune:`` comment listing the choices
(read by `kernelevolve.variation.tunables`, which the tuning operator edits with). A spec is
served by every template whose family its reference's traced program is an instance of
(`kernelevolve.specs.traced_families`), or that the spec declares among its tags.

One file can serve several families that differ only in module-level constants (the cumsum,
reverse, exclusive and product scans share one kernel); each further header line

    # kernelevolve-variant: name=cumprod_dim family=cumprod_dim PRODUCT=True

yields another complete template, with its own header and those constants rewritten.
"""

from __future__ import annotations

import ast
import functools
import logging
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any

from kernelevolve.specs.traced_families import spec_families
from kernelevolve.types import KernelSpec
from kernelevolve.variation.tunables import find_tunables

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

log = logging.getLogger(__name__)

TEMPLATE_PACKAGE = "kernelevolve.variation.templates"
HEADER_PREFIX = "# kernelevolve-template:"
VARIANT_PREFIX = "# kernelevolve-variant:"
HEADER_KEYS = ("name", "family", "backend")
_HEADER_SEARCH_LINES = 5  # the header must sit at the top of the file


class TemplateError(ValueError):
    """A shipped template file is malformed (a bug in package data, not in a candidate)."""


@dataclass(frozen=True)
class Template:
    name: str
    family: str  # matched against the spec's traced families and tags
    backend: str
    source: str
    tunables: dict[str, tuple[Any, ...]] = field(default_factory=dict)  # name -> choices
    # FP32_PRECISION values seeded beside the template's own on GPU platforms (header `seed_precisions=`)
    seed_precisions: tuple[str, ...] = ()
    # Forward and backward (header `training=true`): the templates a training spec is served
    training: bool = False

    @property
    def params(self) -> dict[str, Any]:
        """Current values of the declared tunables, as written in the source."""
        return tunable_values(self.source)


def parse_header(source: str, origin: str = "<template>") -> dict[str, str] | None:
    """The header's key=value fields, or None when the source has no header line."""
    for line in source.splitlines()[:_HEADER_SEARCH_LINES]:
        if not line.startswith(HEADER_PREFIX):
            continue
        fields = _key_values(line[len(HEADER_PREFIX) :], origin)
        missing = [k for k in HEADER_KEYS if k not in fields]
        if missing:
            raise TemplateError(
                f"{origin}: header lacks {missing}; expected {HEADER_PREFIX} name=.. family=.. backend=.."
            )
        return fields
    return None


def parse_tunables(source: str) -> dict[str, tuple[Any, ...]]:
    """Module-level ``NAME = literal  # tune: a, b, c`` constants -> their choices, in source order.

    Only declared tunables count (the tune comment is the template's contract); the current
    value is always among the choices.
    """
    return {t.name: t.choices for t in find_tunables(source) if t.declared}


def tunable_values(source: str) -> dict[str, Any]:
    """Current values of the declared tunables."""
    return {t.name: t.value for t in find_tunables(source) if t.declared}


def _key_values(text: str, origin: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for item in text.split():
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise TemplateError(f"{origin}: header item {item!r} is not key=value")
        fields[key] = value
    return fields


def _with_constants(source: str, values: dict[str, str], origin: str) -> str:
    """`source` with the module-level ``NAME = literal`` assignments of `values` rewritten."""
    lines = source.splitlines(keepends=True)
    found: set[str] = set()
    for node in ast.parse(source).body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in values
            and isinstance(node.value, ast.Constant)
            and node.value.end_col_offset is not None
        ):
            name, line = node.targets[0].id, node.value.lineno - 1
            text = lines[line]
            lines[line] = text[: node.value.col_offset] + values[name] + text[node.value.end_col_offset :]
            found.add(name)
    missing = sorted(set(values) - found)
    if missing:
        raise TemplateError(f"{origin}: variant sets {missing}, which are not module-level literals")
    return "".join(lines)


def _expand_variants(source: str, header: dict[str, str], origin: str) -> list[tuple[dict[str, str], str]]:
    """(header, source) for the file's own template and each of its variants, variant lines removed."""
    variant_lines = [line for line in source.splitlines() if line.startswith(VARIANT_PREFIX)]
    base = "".join(line for line in source.splitlines(keepends=True) if not line.startswith(VARIANT_PREFIX))
    expanded = [(header, base)]
    for line in variant_lines:
        fields = _key_values(line[len(VARIANT_PREFIX) :], origin)
        if "name" not in fields or "family" not in fields:
            raise TemplateError(f"{origin}: variant line lacks name= or family=: {line!r}")
        variant_header = {
            "name": fields.pop("name"),
            "family": fields.pop("family"),
            "backend": header["backend"],
        }
        own_header = f"{HEADER_PREFIX} " + " ".join(f"{k}={v}" for k, v in variant_header.items())
        variant = "\n".join(
            own_header if text.startswith(HEADER_PREFIX) else text for text in base.split("\n")
        )
        expanded.append((variant_header, _with_constants(variant, fields, origin)))
    return expanded


def _read_backend_folder(folder: Traversable) -> list[Template]:
    templates = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.is_file() or not entry.name.endswith(".py") or entry.name.startswith("_"):
            continue
        origin = f"templates/{folder.name}/{entry.name}"
        source = entry.read_text(encoding="utf-8")
        header = parse_header(source, origin)
        if header is None:
            log.warning("%s has no '%s' header; not a template, skipped", origin, HEADER_PREFIX)
            continue
        if header["backend"] != folder.name:
            raise TemplateError(
                f"{origin}: header says backend={header['backend']} but it lives in {folder.name}/"
            )
        for fields, text in _expand_variants(source, header, origin):
            templates.append(
                Template(
                    name=fields["name"],
                    family=fields["family"],
                    backend=fields["backend"],
                    source=text,
                    tunables=parse_tunables(text),
                    seed_precisions=tuple(p for p in fields.get("seed_precisions", "").split(",") if p),
                    training=fields.get("training") == "true",
                )
            )
    return templates


@functools.cache
def _all_templates() -> tuple[Template, ...]:
    root = resources.files(TEMPLATE_PACKAGE)
    found: list[Template] = []
    for folder in sorted(root.iterdir(), key=lambda e: e.name):
        if folder.is_dir() and not folder.name.startswith(("_", ".")):
            found.extend(_read_backend_folder(folder))
    seen: dict[str, str] = {}
    for template in found:
        key = f"{template.backend}/{template.name}"
        if key in seen:
            raise TemplateError(f"two templates are named {key}")
        seen[key] = template.family
    log.debug("loaded %d templates", len(found))
    return tuple(found)


def template_backends() -> list[str]:
    """Backends that have a template folder shipped."""
    return sorted({t.backend for t in _all_templates()})


def load_templates(backend: str | None = None) -> list[Template]:
    """All shipped templates, or those of one backend (a known backend without templates gives [])."""
    templates = _all_templates()
    if backend is None:
        return list(templates)
    from kernelevolve.backends import backend_names

    valid = sorted(set(backend_names()) | set(template_backends()))
    if backend not in valid:
        raise ValueError(f"unknown backend {backend!r}; valid: {', '.join(valid)}")
    return [t for t in templates if t.backend == backend]


def templates_for(spec: KernelSpec, backend: str) -> list[Template]:
    """Templates of `backend` whose family the spec's reference is an instance of (from its traced program,
    never its name or text), or that the spec declares in its tags; for a training spec, only those with a
    backward (`training=true`), whose forward serves forward specs too."""
    families = {*spec.tags, *spec_families(spec)}
    wanted = [t for t in load_templates(backend) if t.family in families]
    return [t for t in wanted if t.training] if spec.backward is not None else wanted
