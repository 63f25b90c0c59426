"""SARIF 2.1.0, the format GitHub code scanning and most security dashboards ingest.

One run, one rule descriptor per code that has findings, every result at
level ``error`` (a graph break is never merely a style note). Columns are
counted in Unicode code points, as everywhere in this linter, and the run says
so through ``columnKind``: SARIF's default is UTF-16 code units, which would
misplace every column after an astral character.
"""

from __future__ import annotations

import json
from pathlib import PureWindowsPath
from typing import Any
from urllib.parse import quote

from graphmend_lint.diagnostics import Diagnostic
from graphmend_lint.output.report import Report, in_cell, one_based

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
TOOL_NAME = "graphmend-lint"
#: The project has no documentation site yet; its package page is the stable address.
INFORMATION_URI = "https://pypi.org/project/graphmend-lint/"

# RFC 3986 characters a path segment may hold unescaped. `:` is left out on
# purpose: in a relative reference's first segment it would read as a scheme.
_URI_PATH_SAFE = "/!$&'()*+,;=@-._~"


def render(report: Report) -> str:
    """The SARIF log as indented JSON."""
    codes = sorted({diagnostic.code for diagnostic in report.diagnostics})
    driver: dict[str, Any] = {
        "name": TOOL_NAME,
        "version": report.tool_version,
        "informationUri": INFORMATION_URI,
        "rules": [_rule(report, code) for code in codes],
    }
    run = {
        "tool": {"driver": driver},
        "columnKind": "unicodeCodePoints",
        "results": [_result(diagnostic) for diagnostic in report.diagnostics],
    }
    log = {"$schema": SCHEMA_URI, "version": SARIF_VERSION, "runs": [run]}
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def _rule(report: Report, code: str) -> dict[str, Any]:
    """A rule descriptor; ``name``/``helpUri`` are left out, not null, when unknown (the schema wants strings)."""
    name = report.rule_names.get(code)
    rule: dict[str, Any] = {"id": code}
    if name:
        rule["name"] = name
    rule["shortDescription"] = {"text": name or code}
    url = report.rule_urls.get(code)
    if url:
        rule["helpUri"] = url
    return rule


def _result(diagnostic: Diagnostic) -> dict[str, Any]:
    start_line, start_column = one_based(diagnostic.start)
    end_line, end_column = one_based(diagnostic.end)
    region = {"startLine": start_line, "startColumn": start_column, "endLine": end_line, "endColumn": end_column}
    physical_location = {"artifactLocation": {"uri": artifact_uri(diagnostic.path)}, "region": region}
    return {
        "ruleId": diagnostic.code,
        "level": "error",
        "message": {"text": in_cell(diagnostic, diagnostic.message)},
        "locations": [{"physicalLocation": physical_location}],
    }


def artifact_uri(path: str) -> str:
    """The path as a URI reference: forward slashes, anything else URIs can't hold %-escaped.

    Relative paths stay relative (code scanning resolves them against the
    checkout). A Windows absolute path becomes a ``file:`` URI, since
    ``C:/x.py`` would otherwise parse as a URI with scheme ``C``.
    """
    windows = PureWindowsPath(path)
    if windows.is_absolute():
        return windows.as_uri()
    return quote(path.replace("\\", "/"), safe=_URI_PATH_SAFE)
