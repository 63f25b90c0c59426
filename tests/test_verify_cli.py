"""``graphmend-lint verify`` end to end: real subprocess arms, real Dynamo (slow).

The fixed arm uses hand-written transforms from ``verify_fixtures/transforms.py``
so that these tests do not depend on which fixes the linter has today.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from conftest import REPO, run_cli

pytest.importorskip("torch")
pytestmark = pytest.mark.dynamo

FIXTURES = REPO / "tests" / "verify_fixtures"


def tagged(path: Path, tag: str) -> set[int]:
    return {n for n, line in enumerate(path.read_text().splitlines(), 1) if f"# {tag}" in line}


def test_predicated_branch_removes_a_break_and_keeps_outputs(tmp_path):
    branch = FIXTURES / "branch.py"
    before = branch.read_bytes()
    result = run_cli(
        "verify", f"{branch}::factory", "--transform", f"{FIXTURES / 'transforms.py'}::predicate",
        "--json", "out.json", "--markdown", "out.md", cwd=tmp_path,
    )
    assert result.code == 0, result.err
    assert branch.read_bytes() == before  # fixed in memory only
    assert "Traceback" not in result.err
    assert "[original] compiling with Dynamo" in result.err and "[fixed] compiling with Dynamo" in result.err

    (data,) = json.loads((tmp_path / "out.json").read_text())
    original, fixed = data["original"], data["fixed"]
    assert {(b["line"], b["gb_id"]) for b in original["breaks"]} == {
        (min(tagged(branch, "BREAK GM101")), "GB0170"), (min(tagged(branch, "BREAK GM201")), "GB0059")}
    assert all(b["filename"] == str(branch) and b["splits"] for b in original["breaks"])
    assert (original["graph_break_count"], fixed["graph_break_count"]) == (2, 1)
    assert [b["gb_id"] for b in fixed["breaks"]] == ["GB0059"]  # the print is still there
    assert original["skipped_frames"] == fixed["skipped_frames"] == []
    assert data["outputs_equal"] is True and data["max_abs_diff"] == 0.0
    assert original["entry"] == "branch.step"
    environment = data["environment"]
    assert environment["device"] == "cpu" and environment["torch"].startswith("2.")
    assert environment["python"] == ".".join(map(str, sys.version_info[:3]))

    reconciliation = data["reconciliation"]
    assert (reconciliation["found"], reconciliation["missed"]) == (2, 0)
    assert (reconciliation["confirmed"], reconciliation["not_a_break"]) == (2, 0)
    assert reconciliation["per_family"]["GM1xx control flow"]["found"] == 1
    assert reconciliation["per_family"]["GM2xx side effects"]["confirmed"] == 1

    markdown = (tmp_path / "out.md").read_text()
    assert "| hf" not in markdown and "| 2 -> 1 | fails -> fails | equal |" in markdown and "PASS" in markdown
    assert "2 -> 1" in result.out and "PASS" in result.out


def test_configured_target_with_a_wrong_fix_fails(tmp_path):
    for name in ("branch.py", "transforms.py"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    (tmp_path / "pyproject.toml").write_text('[tool.graphmend-lint.verify]\ntargets = ["branch.py::factory"]\n')
    result = run_cli("verify", "--transform", "transforms.py::wrong", "--json", "out.json", cwd=tmp_path)
    assert result.code == 1, result.err
    (data,) = json.loads((tmp_path / "out.json").read_text())
    assert data["target"] == "branch.py::factory"
    assert data["outputs_equal"] is False and data["max_abs_diff"] > 0
    assert data["status"] == "fail" and "outputs differ: input set 1" in data["detail"]
    assert "DIFFER" in result.out and "FAIL" in result.out


def test_missing_factory_is_a_clear_error(tmp_path):
    result = run_cli("verify", f"{FIXTURES / 'branch.py'}::nope", cwd=tmp_path)
    assert result.code == 2
    assert "has no attribute 'nope'" in result.out + result.err
    assert "Traceback" not in result.out + result.err


def test_a_tiny_transformers_model_that_breaks(tmp_path):
    """A real model as a regression gate: reformer (transformers 5.23, tiny random config) breaks twice.

    - ``modeling_reformer.py:270`` ``position_ids.max().item()`` (GB0124): GM301 finds it, no fix yet
      (issue 15 item 2); when a fix lands, the logged sites after become 0.
    - ``:2023`` ``if input_shape[-1] % least_common_mult_chunk_length != 0`` (GB0170): caused by
      ``np.lcm`` at ``:168``, which GM403 fixes (``math.lcm``); found by that fix, not by line.
    """
    transformers = pytest.importorskip("transformers")
    result = run_cli("verify", "hf:reformer", "--unsafe-fixes", "--json", "out.json", cwd=tmp_path)
    assert result.code == 0, result.err
    (data,) = json.loads((tmp_path / "out.json").read_text())
    original, fixed = data["original"], data["fixed"]
    assert data["status"] == "pass" and data["outputs_equal"] is True
    assert original["entry"] == "transformers.models.reformer.modeling_reformer.ReformerModel"
    assert "transformers.models.reformer.modeling_reformer" in {m["name"] for m in original["modules"]}
    assert data["environment"]["transformers"] == transformers.__version__
    sites = lambda arm: sorted((Path(b["filename"]).name, b["gb_id"]) for b in arm["breaks"])  # noqa: E731
    assert sites(original) == [("modeling_reformer.py", "GB0124"), ("modeling_reformer.py", "GB0170")]
    assert (original["logged_sites"], fixed["logged_sites"]) == (2, 1)
    assert sites(fixed) == [("modeling_reformer.py", "GB0124")]
    # fullgraph=True fails on the np.lcm branch before the fix, and passes after it although Dynamo still logs
    # the .item() break: with fullgraph=True, torch 2.13 traces .item() as an unbacked symbol instead of breaking
    # (output_graph.py: allow_scalar_outputs=one_graph or config.capture_scalar_outputs).
    assert original["fullgraph"]["passes"] is False and fixed["fullgraph"]["passes"] is True
    statuses = {(s["gb_id"], s["status"], s["via"], tuple(s["codes"])) for s in data["reconciliation"]["sites"]}
    assert statuses == {("GB0124", "found", "line", ("GM301",)), ("GB0170", "found", "fix", ("GM403",))}
    assert "hf:reformer" in result.out and "PASS" in result.out


def test_an_arm_that_runs_too_long_is_killed(tmp_path):
    from graphmend_lint.verify.hook import identity
    from graphmend_lint.verify.runner import ArmPlan, RunOptions, verify_target
    from graphmend_lint.verify.targets import parse_target

    (tmp_path / "slow_target.py").write_text("import time\n\ndef factory():\n    time.sleep(60)\n")
    plan = ArmPlan(("slow_target",), identity)
    result = verify_target(parse_target("slow_target.py::factory", tmp_path), plan, plan,
                           RunOptions(timeout_s=3), None, lambda message: None)
    assert result.status == "error" and "the original arm timed out after 3s" in result.error
