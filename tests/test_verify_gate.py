"""``graphmend-lint verify --write-baseline/--baseline``: the CI gate on logged breaks and recompiles.

The end-to-end tests run the real CLI on a copy of ``verify_fixtures/gate_program.py``
(each gate run measures the original code only, a few seconds here); the rest
check the keys, attribution and bad input without Dynamo.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from conftest import REPO, run_cli
from graphmend_lint.verify.attribution import FIRST_PARTY, THIRD_PARTY, Origin, attribute
from graphmend_lint.verify.baseline import (
    Breaks,
    MeasuredRecompile,
    MeasuredSite,
    Measurement,
    RecompileKey,
    SiteKey,
    baseline_text,
    compare,
    read_baseline,
)
from test_output_formats import sarif_validator

PROGRAM = REPO / "tests" / "verify_fixtures" / "gate_program.py"
TARGET = "prog.py::factory"
BREAK_LINE = 'print("y", y.shape)'


def _edit(path: Path, old: str, new: str) -> None:
    text = PROGRAM.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _gate(tmp_path: Path, *options: str):
    return run_cli("verify", TARGET, *options, cwd=tmp_path)


@pytest.mark.dynamo
def test_gate_fails_only_on_new_sites_or_recompiles(tmp_path):
    pytest.importorskip("torch")
    program = tmp_path / "prog.py"
    shutil.copy(PROGRAM, program)
    written = _gate(tmp_path, "--write-baseline", "breaks.json")
    assert written.code == 0, written.err
    stored = read_baseline(tmp_path / "breaks.json")
    assert stored[TARGET].sites == Counter({SiteKey(FIRST_PARTY, "prog.py", "GB0059", BREAK_LINE): 1})
    assert stored[TARGET].recompiles == Counter()  # both inputs have one shape: compiled once

    _edit(program, "    return y + 1", '    print("again")\n    return y + 1')
    grew = _gate(tmp_path, "--baseline", "breaks.json", "--output-format", "github")
    assert grew.code == 1, grew.err
    new_line = program.read_text().splitlines().index('    print("again")') + 1
    assert grew.out.startswith(f"::error file=prog.py,line={new_line},col=5,")
    assert grew.out.count("::error") == 1 and "title=GB0059::" in grew.out
    assert f'+ first-party prog.py:{new_line}  GB0059' in grew.err and "FAIL" in grew.err
    sarif = _gate(tmp_path, "--baseline", "breaks.json", "--output-format", "sarif")
    assert sarif.code == 1
    sarif_validator().validate(json.loads(sarif.out))
    (result,) = json.loads(sarif.out)["runs"][0]["results"]
    assert result["ruleId"] == "GB0059"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == new_line

    _edit(program, "def step(x):", "# lines inserted above the break\n\n\ndef step(x):")
    _edit(program, "  # BREAK", "  # the same break, another comment")
    shifted = _gate(tmp_path, "--baseline", "breaks.json")
    assert shifted.code == 0, shifted.out + shifted.err
    assert "PASS: sites 1 -> 1" in shifted.out

    _edit(program, BREAK_LINE, "pass")
    shrunk = _gate(tmp_path, "--baseline", "breaks.json", "--output-format", "json")
    assert shrunk.code == 0, shrunk.err
    (entry,) = json.loads(shrunk.out)["targets"]
    assert (entry["status"], entry["shrank"], entry["sites"]) == ("pass", True, [])
    assert entry["gone_sites"] == [{"party": FIRST_PARTY, "path": "prog.py", "gb_id": "GB0059", "source": BREAK_LINE}]
    assert "--write-baseline breaks.json to tighten it" in shrunk.err

    _edit(program, "torch.ones(4) * 3", "torch.ones(5)")
    recompiled = _gate(tmp_path, "--baseline", "breaks.json", "--output-format", "json")
    assert recompiled.code == 1, recompiled.err
    (entry,) = json.loads(recompiled.out)["targets"]
    assert entry["recompile_count"] == {"baseline": 0, "now": 2}  # step, and the code resumed after the print
    assert {r["function"] for r in entry["recompiles"] if r["new"]} == {"step", "step (resumed after a break)"}


@pytest.mark.parametrize(
    ("content", "complaint"),
    [("{not json", "break baseline is not valid JSON"), ('{"findings": []}', "not a graphmend-lint break baseline")],
)
def test_bad_baseline_is_named_before_anything_runs(tmp_path, content, complaint):
    (tmp_path / "breaks.json").write_text(content)
    result = _gate(tmp_path, "--baseline", "breaks.json")
    assert result.code == 2
    assert f"breaks.json: {complaint}" in result.err
    assert "measuring" not in result.err  # no arm was started
    missing = _gate(tmp_path, "--baseline", "absent.json")
    assert missing.code == 2 and "absent.json: cannot read break baseline" in missing.err


def test_gate_options_that_contradict_each_other_are_refused(tmp_path):
    both = _gate(tmp_path, "--baseline", "a.json", "--write-baseline", "b.json")
    assert both.code == 2 and "not both" in both.err
    fixing = _gate(tmp_path, "--write-baseline", "b.json", "--bench")
    assert fixing.code == 2 and "--bench cannot be used with --baseline" in fixing.err
    alone = _gate(tmp_path, "--output-format", "sarif")
    assert alone.code == 2 and "--output-format is for the break gate" in alone.err


def test_attribution_puts_installed_packages_before_the_project(tmp_path):
    root = str(tmp_path)
    assert attribute(f"{root}/src/model.py", root) == Origin(FIRST_PARTY, "src/model.py")
    venv = f"{root}/.venv/lib/python3.11/site-packages/transformers/models/bert/modeling_bert.py"
    assert attribute(venv, root) == Origin(THIRD_PARTY, "transformers/models/bert/modeling_bert.py", "transformers")
    assert attribute("/elsewhere/tool.py", root) == Origin(THIRD_PARTY, "/elsewhere/tool.py")


def _site(line: int, source: str = BREAK_LINE) -> MeasuredSite:
    return MeasuredSite(SiteKey(FIRST_PARTY, "prog.py", "GB0059", source), "/p/prog.py", line, "print", None)


def test_identical_lines_are_counted_and_the_file_round_trips(tmp_path):
    recompile = MeasuredRecompile(RecompileKey(FIRST_PARTY, "prog.py", "step"), "/p/prog.py", 3, "guard")
    stored = Measurement((_site(7),), (recompile,)).breaks
    path = tmp_path / "breaks.json"
    path.write_text(baseline_text({TARGET: stored}))
    assert read_baseline(path) == {TARGET: stored}

    twice = compare(TARGET, Measurement((_site(9), _site(12)), (recompile,)), stored)
    assert [s.line for s in twice.new_sites] == [12] and twice.grew and not twice.shrank
    other = compare(TARGET, Measurement((_site(7, "print(x)"),), ()), stored)
    assert other.grew and other.gone_sites == (_site(7).key,) and other.recompiles_after == 0
    unknown = compare("other.py::factory", Measurement((_site(7),), ()), None)
    assert unknown.grew and unknown.stored is None
    assert not compare(TARGET, Measurement((), ()), Breaks()).grew


@pytest.mark.dynamo
def test_a_break_inside_an_installed_package_is_third_party(tmp_path):
    pytest.importorskip("torch")
    packages = tmp_path / "venv" / "lib" / "site-packages"
    (packages / "fakepkg").mkdir(parents=True)
    (packages / "fakepkg" / "__init__.py").write_text("def report(y):\n    print('y', y.shape)\n    return y\n")
    program = tmp_path / "prog.py"
    _edit(program, BREAK_LINE, "fakepkg.report(y)")
    program.write_text("import fakepkg\n" + program.read_text())
    written = run_cli("verify", TARGET, "--write-baseline", "breaks.json", "--output-format", "json",
                      cwd=tmp_path, env={"PYTHONPATH": str(packages)})
    assert written.code == 0, written.err
    (entry,) = json.loads(written.out)["targets"]
    assert [(s["party"], s["package"], s["path"], s["line"], s["source"]) for s in entry["sites"]] == [
        (THIRD_PARTY, "fakepkg", "fakepkg/__init__.py", 2, "print('y', y.shape)")]
    assert "third-party (fakepkg) fakepkg/__init__.py:2" in written.err


def test_annotations_place_first_party_sites_and_name_third_party_ones():
    from graphmend_lint.verify.gate import gate_run
    from graphmend_lint.verify.gate_report import render

    inside = MeasuredSite(SiteKey(THIRD_PARTY, "fakepkg/core.py", "GB0059", "print(y)"),
                          "/v/site-packages/fakepkg/core.py", 5, "print", "fakepkg", 4)
    run = gate_run(Path("breaks.json"), False, {TARGET: Measurement((_site(7), inside), ())}, {TARGET: Breaks()})
    first, third = render(run, "github").splitlines()
    assert first.startswith("::error file=prog.py,line=7,") and "title=GB0059::" in first
    assert first.endswith("new graph break in prog.py::factory (not in the baseline): print")
    assert third.startswith("::error title=new third-party break::prog.py::factory:")
    assert "third-party (fakepkg) fakepkg/core.py:5" in third
    assert [r["ruleId"] for r in json.loads(render(run, "sarif"))["runs"][0]["results"]] == ["GB0059"]
