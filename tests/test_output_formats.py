"""Each output format, byte for byte, on hand-built diagnostics.

The expected texts are written out in full on purpose: the formats are a
contract with users' scripts and CI (ruff-compatible JSON, GitHub workflow
commands, SARIF uploads), so any change to them should show up as a diff here.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from graphmend_lint import output
from graphmend_lint.diagnostics import Applicability, Diagnostic, Edit, Fix, Position
from graphmend_lint.output import FORMATS, Report, render
from graphmend_lint.output.sarif import artifact_uri

MODEL = "pkg/model.py"
COMMA_PATH = "pkg/a,b.py"

MODEL_SOURCE = (
    "import torch\n"
    "größe = torch.ones(3)\n"
    "def f(x):\n"
    "    return x.item() + größe.sum()\n"
    "def g(x):\n"
    "    print(x)\n"
    "    y = torch.cat([\n"
    "        x,\n"
    "    ])\n"
)

NON_ASCII = Diagnostic(
    code="GM501",
    message="`größe` is a global tensor — captured as a constant",
    path=MODEL,
    start=Position(2, 0),
    end=Position(2, 5),
)
SAFE = Diagnostic(
    code="GM101",
    message="`.item()` forces a graph break",
    path=MODEL,
    start=Position(4, 11),
    end=Position(4, 19),
    fix=Fix(
        edits=(Edit(Position(4, 11), Position(4, 19), "x"),),
        applicability=Applicability.SAFE,
        message="Keep the value a tensor",
    ),
    scope_chain=("Model.forward", "f"),
)
UNSAFE = Diagnostic(
    code="GM202",
    message="`print()` forces a graph break",
    path=MODEL,
    start=Position(6, 4),
    end=Position(6, 12),
    fix=Fix(
        edits=(Edit(Position(6, 4), Position(6, 12), "pass"),),
        applicability=Applicability.UNSAFE,
        message="Remove the `print()`",
    ),
    noqa_line=5,
)
MULTI_LINE = Diagnostic(
    code="GM401",
    message="list built across lines",
    path=MODEL,
    start=Position(7, 8),
    end=Position(9, 6),
    fix=Fix(edits=(), applicability=Applicability.DISPLAY_ONLY, message="Use `torch.stack`"),
)
COMMA = Diagnostic(
    code="GM301",
    message="`if x.sum() > 0:` branches on data",
    path=COMMA_PATH,
    start=Position(1, 3),
    end=Position(1, 15),
)

ALL = (SAFE, UNSAFE, MULTI_LINE, NON_ASCII, COMMA)  # deliberately unsorted

RULE_NAMES = {
    "GM101": "tensor-item",
    "GM202": "print-in-compiled",
    "GM301": "data-dependent-branch",
    "GM401": "multiline-cat",
    "GM501": "global-tensor",
}
RULE_URLS = {"GM101": "https://example.org/rules/tensor-item"}


def text(*lines: str) -> str:
    """The expected output: every line newline-terminated, as :func:`render` promises."""
    return "".join(f"{line}\n" for line in lines)


def make_report(**overrides: Any) -> Report:
    fields: dict[str, Any] = {
        "diagnostics": ALL,
        "hidden_unsafe_fixes": 1,
        "rule_names": RULE_NAMES,
        "rule_urls": RULE_URLS,
        "sources": {MODEL: MODEL_SOURCE},
        "tool_version": "0.1.0",
    }
    fields.update(overrides)
    return Report(**fields)


# --- dispatch -----------------------------------------------------------------


def test_every_advertised_format_renders_and_unknown_ones_are_refused() -> None:
    report = make_report()
    for name in FORMATS:
        assert render(name, report).endswith("\n")
    with pytest.raises(ValueError, match="concise, full, json, sarif, github"):
        render("xml", report)
    assert output.__all__ == ["FORMATS", "Report", "render"]


def test_report_sorts_defensively() -> None:
    report = make_report()
    assert [d.code for d in report.diagnostics] == ["GM301", "GM501", "GM101", "GM202", "GM401"]


# --- concise ------------------------------------------------------------------

CONCISE_LINES = [
    "pkg/a,b.py:1:4: GM301 `if x.sum() > 0:` branches on data",
    "pkg/model.py:2:1: GM501 `größe` is a global tensor — captured as a constant",
    "pkg/model.py:4:12: GM101 [*] `.item()` forces a graph break",
    "pkg/model.py:6:5: GM202 `print()` forces a graph break",
    "pkg/model.py:7:9: GM401 list built across lines",
]


def test_concise_marks_safe_fixes_and_counts_hidden_unsafe_ones() -> None:
    assert render("concise", make_report()) == text(
        *CONCISE_LINES,
        "Found 5 errors.",
        "[*] 1 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option).",
    )


def test_concise_with_unsafe_fixes_marks_them_and_hides_nothing() -> None:
    lines = render("concise", make_report(unsafe_fixes=True)).splitlines()
    assert lines[3] == "pkg/model.py:6:5: GM202 [*] `print()` forces a graph break"
    assert lines[4] == CONCISE_LINES[4]  # display-only fixes are never applicable
    assert lines[-2:] == ["Found 5 errors.", "[*] 2 fixable with the `--fix` option."]


def test_concise_only_hidden_fixes_uses_ruffs_no_fixes_sentence() -> None:
    report = make_report(diagnostics=(UNSAFE, replace(UNSAFE, start=Position(6, 5))), hidden_unsafe_fixes=2)
    assert render("concise", report).splitlines()[-2:] == [
        "Found 2 errors.",
        "No fixes available (2 hidden fixes can be enabled with the `--unsafe-fixes` option).",
    ]


def test_concise_single_error_is_singular_and_unfixable_adds_no_fix_line() -> None:
    assert render("concise", make_report(diagnostics=(COMMA,), hidden_unsafe_fixes=0)) == (
        f"{CONCISE_LINES[0]}\nFound 1 error.\n"
    )


def test_concise_nothing_found() -> None:
    assert render("concise", make_report(diagnostics=(), hidden_unsafe_fixes=0)) == "All checks passed!\n"


def test_concise_after_fixing_reports_fixed_and_remaining() -> None:
    report = make_report(diagnostics=(COMMA,), hidden_unsafe_fixes=0, fixed_count=2)
    assert render("concise", report).splitlines()[-1] == "Found 3 errors (2 fixed, 1 remaining)."
    everything_fixed = make_report(diagnostics=(), hidden_unsafe_fixes=0, fixed_count=2)
    assert render("concise", everything_fixed) == "Found 2 errors (2 fixed, 0 remaining).\n"


def test_concise_quiet_prints_findings_only() -> None:
    assert render("concise", make_report(quiet=True)) == text(*CONCISE_LINES)
    assert render("concise", make_report(diagnostics=(), quiet=True)) == ""


def test_show_fixes_lists_applied_fixes_by_file() -> None:
    applied = (replace(SAFE, start=Position(9, 0)), COMMA, SAFE)
    report = make_report(
        diagnostics=(NON_ASCII,), hidden_unsafe_fixes=0, fixed_count=3, applied=applied, show_fixes=True
    )
    assert render("concise", report) == text(
        CONCISE_LINES[1],
        "",
        "Fixed 3 errors:",
        "pkg/a,b.py:",
        "  - GM301 `if x.sum() > 0:` branches on data",
        "pkg/model.py:",
        "  - GM101 `.item()` forces a graph break",
        "  - GM101 `.item()` forces a graph break",
        "",
        "Found 4 errors (3 fixed, 1 remaining).",
    )
    without_flag = render("concise", replace(report, show_fixes=False))
    assert "Fixed 3 errors:" not in without_flag


def test_statistics_table_counts_per_rule_most_frequent_first() -> None:
    extra = (
        replace(COMMA, start=Position(2, 0)),
        replace(COMMA, start=Position(3, 0)),
        replace(SAFE, start=Position(5, 0)),
    )
    report = make_report(diagnostics=ALL + extra, statistics=True)
    assert render("concise", report) == text(
        "3\tGM301\t[ ] data-dependent-branch",
        "2\tGM101\t[*] tensor-item",
        "1\tGM202\t[ ] print-in-compiled",
        "1\tGM401\t[ ] multiline-cat",
        "1\tGM501\t[ ] global-tensor",
        "Found 8 errors.",
        "[*] 2 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option).",
    )
    assert render("full", report) == render("concise", report)


def test_statistics_without_fixable_rules_drops_the_marker_column() -> None:
    report = make_report(diagnostics=(COMMA, NON_ASCII), hidden_unsafe_fixes=0, statistics=True, quiet=True)
    assert render("concise", report) == "1\tGM301\tdata-dependent-branch\n1\tGM501\tglobal-tensor\n"


# --- full ---------------------------------------------------------------------


def test_full_underlines_the_range_and_explains_the_fix() -> None:
    report = make_report(diagnostics=(NON_ASCII, SAFE, UNSAFE), hidden_unsafe_fixes=1)
    assert render("full", report) == text(
        "pkg/model.py:2:1: GM501 `größe` is a global tensor — captured as a constant",
        "  |",
        "2 | größe = torch.ones(3)",
        "  | ^^^^^",
        "  |",
        "",
        "pkg/model.py:4:12: GM101 [*] `.item()` forces a graph break",
        "  |",
        "4 |     return x.item() + größe.sum()",
        "  |            ^^^^^^^^",
        "  |",
        "  = help: Keep the value a tensor (safe fix)",
        "  = in compile scope: Model.forward -> f",
        "",
        "pkg/model.py:6:5: GM202 `print()` forces a graph break",
        "  |",
        "6 |     print(x)",
        "  |     ^^^^^^^^",
        "  |",
        "  = help: Remove the `print()` (unsafe fix)",
        "",
        "Found 3 errors.",
        "[*] 1 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option).",
    )


def test_full_multi_line_range_underlines_each_line_from_its_code() -> None:
    report = make_report(diagnostics=(MULTI_LINE,), quiet=True)
    assert render("full", report) == text(
        "pkg/model.py:7:9: GM401 list built across lines",
        "  |",
        "7 |     y = torch.cat([",
        "  |         ^^^^^^^^^^^",
        "8 |         x,",
        "  |         ^^",
        "9 |     ])",
        "  |     ^^",
        "  |",
        "  = help: Use `torch.stack`",  # advice without edits: no "(display-only fix)" after it
        "",
    )


def test_full_long_range_is_elided_and_wide_characters_keep_carets_aligned() -> None:
    source = "".join(f"x{n} = 1\n" for n in range(1, 12)) + "名前 = torch.ones(1)\n"
    long_range = Diagnostic("GM401", "long", "w.py", Position(1, 0), Position(11, 0))
    wide = Diagnostic("GM501", "wide", "w.py", Position(12, 5), Position(12, 10))
    report = make_report(diagnostics=(long_range, wide), sources={"w.py": source}, quiet=True)
    assert render("full", report) == text(
        "w.py:1:1: GM401 long",
        "  |",
        "1 | x1 = 1",
        "  | ^^^^^^",
        "2 | x2 = 1",
        "  | ^^^^^^",
        "3 | x3 = 1",
        "  | ^^^^^^",
        "4 | x4 = 1",
        "  | ^^^^^^",
        "5 | x5 = 1",
        "  | ^^^^^^",
        "  | ... (5 more lines)",  # line 11 is excluded: the range ends at its column 0
        "  |",
        "",
        "w.py:12:6: GM501 wide",
        "   |",
        "12 | 名前 = torch.ones(1)",
        "   |        ^^^^^",
        "   |",
        "",
    )


def test_full_without_source_still_prints_header_and_notes() -> None:
    report = make_report(diagnostics=(SAFE,), sources={}, quiet=True)
    assert render("full", report) == text(
        "pkg/model.py:4:12: GM101 [*] `.item()` forces a graph break",
        "  = help: Keep the value a tensor (safe fix)",
        "  = in compile scope: Model.forward -> f",
        "",
    )


# --- json ---------------------------------------------------------------------

JSON_KEYS = [
    "cell",
    "code",
    "end_location",
    "filename",
    "fix",
    "location",
    "message",
    "noqa_row",
    "scope_chain",
    "url",
]


def test_json_rows_follow_ruffs_layout_with_one_based_columns() -> None:
    rendered = render("json", make_report())
    rows = json.loads(rendered)
    assert rendered.startswith('[\n  {\n    "cell": null,\n')  # indent=2, ruff's key order
    assert [list(row) for row in rows] == [JSON_KEYS] * 5
    by_code = {row["code"]: row for row in rows}
    assert by_code["GM101"] == {
        "cell": None,
        "code": "GM101",
        "end_location": {"column": 20, "row": 4},
        "filename": "pkg/model.py",
        "fix": {
            "applicability": "safe",
            "edits": [{"content": "x", "end_location": {"column": 20, "row": 4}, "location": {"column": 12, "row": 4}}],
            "message": "Keep the value a tensor",
        },
        "location": {"column": 12, "row": 4},
        "message": "`.item()` forces a graph break",
        "noqa_row": 4,
        "scope_chain": ["Model.forward", "f"],
        "url": "https://example.org/rules/tensor-item",
    }
    assert by_code["GM202"]["fix"]["applicability"] == "unsafe"
    assert by_code["GM202"]["noqa_row"] == 5  # the finding's own noqa line wins
    assert by_code["GM401"]["fix"] == {"applicability": "display-only", "edits": [], "message": "Use `torch.stack`"}
    assert by_code["GM401"]["end_location"] == {"column": 7, "row": 9}
    assert by_code["GM301"]["fix"] is None
    assert by_code["GM301"]["url"] is None
    assert by_code["GM301"]["filename"] == COMMA_PATH
    assert by_code["GM301"]["scope_chain"] == []


def test_json_keeps_non_ascii_readable_and_empty_is_an_empty_array() -> None:
    assert "`größe` is a global tensor — captured as a constant" in render("json", make_report())
    assert render("json", make_report(diagnostics=())) == "[]\n"


# --- sarif --------------------------------------------------------------------

SCHEMA_PATH = Path(output.__file__).with_name("sarif-schema-2.1.0.json")


def sarif_validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)


def test_sarif_is_valid_against_the_official_schema() -> None:
    validator = sarif_validator()
    for diagnostics in (ALL, ()):
        log = json.loads(render("sarif", make_report(diagnostics=diagnostics)))
        errors = [error.message for error in validator.iter_errors(log)]
        assert errors == []


def test_sarif_validator_is_not_vacuous() -> None:
    log = json.loads(render("sarif", make_report()))
    log["runs"][0]["results"][0]["level"] = "fatal"
    log["runs"][0]["results"][1]["locations"][0]["physicalLocation"]["region"]["startColumn"] = 0
    del log["runs"][0]["tool"]["driver"]["name"]
    assert len(list(sarif_validator().iter_errors(log))) == 3


def test_sarif_content() -> None:
    log = json.loads(render("sarif", make_report()))
    assert log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "graphmend-lint"
    assert driver["version"] == "0.1.0"
    assert driver["informationUri"].startswith("https://")
    assert run["columnKind"] == "unicodeCodePoints"
    assert driver["rules"][0] == {
        "id": "GM101",
        "name": "tensor-item",
        "shortDescription": {"text": "tensor-item"},
        "helpUri": "https://example.org/rules/tensor-item",
    }
    assert [rule["id"] for rule in driver["rules"]] == ["GM101", "GM202", "GM301", "GM401", "GM501"]
    assert all("helpUri" not in rule for rule in driver["rules"][1:])  # omitted, never null
    results = run["results"]
    assert [result["ruleId"] for result in results] == ["GM301", "GM501", "GM101", "GM202", "GM401"]
    assert {result["level"] for result in results} == {"error"}
    assert results[1]["message"] == {"text": "`größe` is a global tensor — captured as a constant"}
    multi = results[4]["locations"][0]["physicalLocation"]
    assert multi == {
        "artifactLocation": {"uri": "pkg/model.py"},
        "region": {"startLine": 7, "startColumn": 9, "endLine": 9, "endColumn": 7},
    }
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "pkg/a,b.py"}


def test_sarif_rules_without_a_known_name_fall_back_to_the_code() -> None:
    log = json.loads(render("sarif", make_report(diagnostics=(COMMA,), rule_names={}, rule_urls={})))
    assert log["runs"][0]["tool"]["driver"]["rules"] == [{"id": "GM301", "shortDescription": {"text": "GM301"}}]


@pytest.mark.parametrize(
    ("path", "uri"),
    [
        ("pkg/a,b.py", "pkg/a,b.py"),
        ("pkg\\win\\x.py", "pkg/win/x.py"),
        ("my dir/größe.py", "my%20dir/gr%C3%B6%C3%9Fe.py"),
        ("50%/x#1.py", "50%25/x%231.py"),
        ("a:b.py", "a%3Ab.py"),
        ("/abs/x.py", "/abs/x.py"),
        ("C:\\src\\x.py", "file:///C:/src/x.py"),
    ],
)
def test_sarif_artifact_uri(path: str, uri: str) -> None:
    assert artifact_uri(path) == uri


# --- github -------------------------------------------------------------------


def test_github_gives_columns_only_for_single_line_ranges() -> None:
    assert render("github", make_report(diagnostics=(SAFE, MULTI_LINE))) == (
        "::error file=pkg/model.py,line=4,col=12,endLine=4,endColumn=20,title=GM101"
        "::GM101 `.item()` forces a graph break\n"
        "::error file=pkg/model.py,line=7,endLine=9,title=GM401::GM401 list built across lines\n"
    )


def test_github_escapes_properties_and_message() -> None:
    tricky = replace(COMMA, path="dir:x/a,b%.py", message="50% of calls\r\nbreak: here, too")
    assert render("github", make_report(diagnostics=(tricky, NON_ASCII))) == (
        "::error file=dir%3Ax/a%2Cb%25.py,line=1,col=4,endLine=1,endColumn=16,title=GM301"
        "::GM301 50%25 of calls%0D%0Abreak: here, too\n"
        "::error file=pkg/model.py,line=2,col=1,endLine=2,endColumn=6,title=GM501"
        "::GM501 `größe` is a global tensor — captured as a constant\n"
    )


def test_github_prints_nothing_without_findings() -> None:
    assert render("github", make_report(diagnostics=())) == ""


def test_notebook_findings_name_their_cell_in_every_format() -> None:
    in_notebook = replace(SAFE, path="nb.ipynb", cell=3)
    report = make_report(diagnostics=(in_notebook,))
    assert render("concise", report).startswith("nb.ipynb:cell 3:4:12: GM101 [*] `.item()` forces a graph break\n")
    assert json.loads(render("json", report))[0]["cell"] == 3
    assert render("github", report).endswith("::cell 3: GM101 `.item()` forces a graph break\n")
    result = json.loads(render("sarif", report))["runs"][0]["results"][0]
    assert result["message"]["text"] == "cell 3: `.item()` forces a graph break"
