"""Rule documentation, rendered from the rule class itself.

``graphmend-lint rule CODE`` prints :func:`rule_markdown`, and
``docs/rules/CODE.md`` is the same text written by
``python -m graphmend_lint.docs_gen``, so the terminal and the website never
disagree. A page is assembled from three sources:

* the rule class: code, name, summary, fix applicability, options, and the
  docstring's ruff-style sections;
* Dynamo's own explanation of each graph break the rule cites, from
  ``gb_registry_excerpt.json``: a small copy of the ids our rules cite, taken
  from torch's ``graph_break_registry.json`` so this works without torch;
* the rule's catalog folder ``rules/GMxxx/`` of runnable programs, when this
  runs from a source checkout (an installed wheel does not ship the catalog,
  and the page then links to it instead).
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from graphmend_lint.diagnostics import Applicability
from graphmend_lint.rules.base import Rule

REPOSITORY_URL = "https://github.com/graphmend/graphmend-lint"
#: A rule's page, the target of every output format's rule link and of the language server's code links.
RULE_PAGE_URL = REPOSITORY_URL + "/blob/main/docs/rules/{code}.md"
GRAPH_BREAK_SITE_URL = "https://meta-pytorch.github.io/compile-graph-break-site/gb/"
PACKAGE_DIR = Path(__file__).resolve().parent
REGISTRY_EXCERPT_PATH = PACKAGE_DIR / "gb_registry_excerpt.json"
#: The top-level catalog of a source checkout; absent in an installed wheel.
CATALOG_DIR = PACKAGE_DIR.parent / "rules"

#: Docstring sections in page order; "Why is this bad" is shown as "Why Dynamo breaks".
SECTION_TITLES = {
    "What it does": "What it does",
    "Why is this bad": "Why Dynamo breaks",
    "Example": "Example",
    "Use instead": "Use instead",
    "Fix safety": "Fix safety",
}
APPLICABILITY_TEXT = {
    Applicability.SAFE: "safe, applied by `--fix`",
    Applicability.UNSAFE: "unsafe, applied by `--fix --unsafe-fixes`",
    Applicability.DISPLAY_ONLY: "display only, shown but never applied",
}
_HEADING = re.compile(r"^## (?P<title>.+?)\s*$")


class GraphBreak(NamedTuple):
    """Dynamo's explanation of one graph-break id, as the registry states it."""

    gb_id: str
    gb_type: str
    explanation: str
    hints: tuple[str, ...]


class CatalogPair(NamedTuple):
    """A program of the catalog that breaks the graph, and its fixed twin if any."""

    bad: Path
    fixed: Path | None


# -- small formatting helpers, shared with docs_gen ---------------------------------------------


def toml_value(value: Any) -> str:
    """*value* as it is written in a TOML config file (docs show defaults this way)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    raise TypeError(f"no TOML spelling for {value!r}")


def value_type(value: Any) -> str:
    """The config type of a rule option, named after its default."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (tuple, list)):
        return "list of strings" if all(isinstance(item, str) for item in value) else "list"
    return {int: "int", float: "float", str: "string"}.get(type(value), type(value).__name__)


def gb_url(gb_id: str) -> str:
    """PyTorch's page for one graph-break id (the link Dynamo prints with the break)."""
    return f"{GRAPH_BREAK_SITE_URL}gb{gb_id.removeprefix('GB')}.html"


def rule_page_url(rule: type[Rule]) -> str | None:
    """The rule's page, or None for a plugin rule: only rules shipped in this package have one."""
    return RULE_PAGE_URL.format(code=rule.code) if rule.__module__.startswith("graphmend_lint.rules.") else None


def fix_text(rule: type[Rule]) -> str:
    """How a rule's fix is applied, in words."""
    if not rule.fix_applicabilities:
        return "none"
    return "; ".join(APPLICABILITY_TEXT[a] for a in rule.fix_applicabilities)


def table_cell(text: str) -> str:
    """Text that cannot end a Markdown table cell early."""
    return text.replace("|", "\\|").replace("\n", " ")


# -- the pieces of a page -----------------------------------------------------------------------


def docstring_sections(rule: type[Rule]) -> dict[str, str]:
    """The ``## Title`` sections of a rule docstring, in order, bodies stripped.

    Headings inside fenced code blocks are code (a ``## comment`` in an
    example), not sections.
    """
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    in_fence = False
    for line in inspect.cleandoc(rule.__doc__ or "").splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        heading = None if in_fence else _HEADING.match(line)
        if heading:
            current = sections.setdefault(heading.group("title"), [])
        elif current is not None:
            current.append(line)
    return {title: "\n".join(body).strip() for title, body in sections.items()}


def parse_registry_excerpt(data: Mapping[str, Any]) -> dict[str, GraphBreak]:
    """Graph breaks by id from the excerpt's JSON (see ``docs_gen.registry_excerpt_json``)."""
    return {
        gb_id: GraphBreak(gb_id, entry["gb_type"], entry["explanation"], tuple(entry["hints"]))
        for gb_id, entry in data.get("entries", {}).items()
    }


@cache
def registry_excerpt() -> Mapping[str, GraphBreak]:
    """The shipped excerpt of torch's graph-break registry, by id (empty if it is missing)."""
    if not REGISTRY_EXCERPT_PATH.is_file():
        return {}
    return parse_registry_excerpt(json.loads(REGISTRY_EXCERPT_PATH.read_text(encoding="utf-8")))


def catalog_pairs(code: str, catalog: Path = CATALOG_DIR) -> list[CatalogPair]:
    """Each ``bad_NAME.py`` of a rule's catalog folder with its ``fixed_NAME.py``, by name."""
    folder = catalog / code
    return [
        CatalogPair(bad, fixed if fixed.is_file() else None)
        for bad in sorted(folder.glob("bad_*.py"))
        for fixed in [folder / ("fixed_" + bad.name.removeprefix("bad_"))]
    ]


def _python_block(text: str) -> str:
    return "```python\n" + text.rstrip("\n") + "\n```"


def _catalog_link(path: Path, catalog: Path) -> str:
    """A link that works from ``docs/rules/`` (the page's folder) to the catalog file."""
    relative = path.relative_to(catalog.parent).as_posix()
    return f"[`{relative}`](../../{relative})"


def _header(rule: type[Rule]) -> Iterator[str]:
    yield f"# {rule.code}: {rule.name}"
    yield ""
    yield rule.summary.rstrip(".") + "."
    yield ""
    yield f"- Fix: {fix_text(rule)}."
    breaks = ", ".join(f"[{gb_id}]({gb_url(gb_id)}) ({gb_type})" for gb_id, gb_type in rule.dynamo_gb.items())
    yield f"- Dynamo graph breaks: {breaks or 'none'}."
    yield f"- Select with `--select {rule.code}`; suppress one line with `# noqa: {rule.code}`."


def _graph_break_lines(rule: type[Rule], registry: Mapping[str, GraphBreak]) -> Iterator[str]:
    """Dynamo's own words for each id the rule cites."""
    if rule.dynamo_gb:
        yield ""
        yield (
            "What Dynamo itself says, from torch's graph-break registry "
            "(`{...}` marks what Dynamo fills in when it reports the break):"
        )
    for gb_id, gb_type in rule.dynamo_gb.items():
        yield ""
        yield f"### [{gb_id}]({gb_url(gb_id)}): {gb_type}"
        entry = registry.get(gb_id)
        if entry is None:
            yield ""
            yield "Not in this release's copy of Dynamo's graph-break registry."
            continue
        yield ""
        yield f"Dynamo explains: {entry.explanation}"
        if entry.hints:
            yield ""
            yield "Dynamo's hints:"
            yield ""
            yield from (f"- {hint}" for hint in entry.hints)


def _example_lines(title: str, pair: CatalogPair | None, catalog: Path) -> Iterator[str]:
    """The catalog program added to *Example* (the bad one) or *Use instead* (its fix)."""
    if pair is None or pair.fixed is None:
        return
    path = pair.bad if title == "Example" else pair.fixed
    yield ""
    yield f"The complete program {_catalog_link(path, catalog)}:"
    yield ""
    yield _python_block(path.read_text(encoding="utf-8"))


def _options_lines(rule: type[Rule]) -> Iterator[str]:
    if not rule.options:
        return
    yield "## Options"
    yield ""
    yield f"Set in `[tool.graphmend-lint.rules.{rule.code}]`:"
    yield ""
    yield from options_table(rule)


def options_table(rule: type[Rule]) -> Iterator[str]:
    """A rule's options as a Markdown table (its page and docs/configuration.md share it)."""
    yield "| Option | Type | Default | Meaning |"
    yield "|---|---|---|---|"
    for key, option in rule.options.items():
        default = f"`{table_cell(toml_value(option.default))}`"
        yield f"| `{key}` | {value_type(option.default)} | {default} | {table_cell(option.meaning)} |"
    yield ""


def _catalog_lines(rule: type[Rule], pairs: list[CatalogPair], catalog: Path) -> Iterator[str]:
    if not catalog.is_dir():
        yield "## Catalog"
        yield ""
        url = f"{REPOSITORY_URL}/tree/main/rules/{rule.code}"
        yield f"Runnable programs for this rule are in [`rules/{rule.code}/`]({url})."
        yield ""
        return
    if not pairs:
        return
    yield "## Catalog"
    yield ""
    yield "Runnable programs for this rule: each `bad_*.py` breaks the graph, each `fixed_*.py` is its fix."
    yield ""
    for pair in pairs:
        fixed = f", fixed in {_catalog_link(pair.fixed, catalog)}" if pair.fixed else ""
        yield f"- {_catalog_link(pair.bad, catalog)}{fixed}"
    yield ""


def rule_markdown(
    rule: type[Rule], *, registry: Mapping[str, GraphBreak] | None = None, catalog: Path = CATALOG_DIR
) -> str:
    """The Markdown page of one rule.

    *registry* and *catalog* default to the shipped excerpt and the checkout's
    catalog; ``docs_gen`` passes a freshly built registry excerpt so the pages
    and the excerpt are generated together.
    """
    registry = registry_excerpt() if registry is None else registry
    sections = docstring_sections(rule)
    sections.setdefault("What it does", rule.summary.rstrip(".") + ".")
    if rule.dynamo_gb:
        sections.setdefault("Why is this bad", "")  # Dynamo's own explanation still goes there
    pairs = catalog_pairs(rule.code, catalog) if catalog.is_dir() else []
    first_pair = next((pair for pair in pairs if pair.fixed is not None), None)
    known = [title for title in SECTION_TITLES if title in sections]
    extra = [title for title in sections if title not in SECTION_TITLES]
    lines = [*_header(rule), ""]
    for title in [*known, *extra]:
        lines += [f"## {SECTION_TITLES.get(title, title)}", ""]
        if sections[title]:
            lines.append(sections[title])
        if title == "Why is this bad":
            lines += list(_graph_break_lines(rule, registry))
        if title in ("Example", "Use instead"):
            lines += list(_example_lines(title, first_pair, catalog))
        lines.append("")
    lines += _options_lines(rule)
    lines += _catalog_lines(rule, pairs, catalog)
    return "\n".join(lines).rstrip("\n") + "\n"
