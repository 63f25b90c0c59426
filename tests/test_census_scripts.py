"""The census scripts (benchmarks/hf_census.py and friends) on synthetic results: no Dynamo, no models.

The measuring itself is verify's (tested in test_verify_*.py); these check
what the scripts do with its results: skip reasons, the census's order,
which original sites survive a fix, categories, totals, and static recall.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import break_categories as bc
import census_report
import hf_census
import static_recall
import timm_diffusers_sweep


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("the original arm timed out after 300s without a result:\n...", hf_census.TIMEOUT),
        ("hf:clip: no dummy inputs for main input 'foo'; write a factory target instead", hf_census.NO_INPUTS),
        ("hf:x: cannot build AutoModel for this config: nope", hf_census.CONFIG),
        ("factory failed: ImportError: XModel requires the timm library", hf_census.DEPENDENCY),
        ("factory failed: RuntimeError: size mismatch", hf_census.CONFIG),
        ("backward failed: RuntimeError: element 0 of tensors does not require grad", hf_census.BACKWARD),
        ("callable failed: IndexError: index out of range", hf_census.FORWARD),
        ("dynamo failed: InternalTorchDynamoError: boom", hf_census.DYNAMO),
        ("the scan process crashed (exit -11) on this model: ", hf_census.ARM_ERROR),
        (f"the scan process {hf_census.crash_reason(-9, stalled=False)} on this model: ", hf_census.OUT_OF_MEMORY),
        (f"the scan process {hf_census.crash_reason(-9, stalled=True)} on this model: ", hf_census.TIMEOUT),
        ("callable failed: RuntimeError: [enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't "
         "allocate memory: you tried to allocate 25769803776 bytes.", hf_census.OUT_OF_MEMORY),
        ("callable failed: MemoryError: ", hf_census.OUT_OF_MEMORY),
    ],
)
def test_arm_errors_become_skip_reasons(text: str, reason: str) -> None:
    assert hf_census.classify_error(text) == reason


def test_select_keeps_the_order_of_only_and_random_order_is_fixed() -> None:
    types = [("bert", "BertModel"), ("clip_text_model", None), ("gpt2", "GPT2Model"), ("t5", "T5Model")]
    assert hf_census.select(types, None, 2) == types[:2]
    assert hf_census.select(types, "gpt2, nope,bert", None) == [
        ("gpt2", "GPT2Model"), ("nope", hf_census.UNKNOWN), ("bert", "BertModel")]
    shuffled = hf_census.select(types, None, None, random_order=True)
    assert sorted(shuffled) == sorted(types) and shuffled == hf_census.select(types[::-1], None, None, True)
    assert hf_census.hf_target("trocr", "TrOCRForCausalLM") == "hf:trocr:TrOCRForCausalLM"


def test_a_crashed_scan_worker_leaves_a_skip_for_its_model(tmp_path: Path) -> None:
    hf_census.record_crash(tmp_path, "hf:bad:BadModel", "the scan process crashed (exit -11) on this model: ", 300)
    for mode in hf_census.MODES:
        scan = hf_census.cached_scan(tmp_path, "bad", mode)
        assert scan is not None and hf_census.scan_skip(scan) == hf_census.ARM_ERROR
        assert hf_census.logged_sites(scan) == 0
    assert not hf_census.breaking(tmp_path, "bad", "eval")


class FakeBreak:
    def __init__(self, filename: str, line: int, gb_id: str) -> None:
        self.filename, self.line, self.gb_id = filename, line, gb_id


class FakeArm:
    def __init__(self, breaks: list[FakeBreak], fixed_texts: dict[str, str] | None = None) -> None:
        self.breaks, self.fixed_texts = breaks, fixed_texts or {}


def test_site_changes_maps_fixed_lines_back_and_counts_new_sites(tmp_path: Path) -> None:
    path = tmp_path / "modeling_x.py"
    path.write_text("a = 1\nprint(a)\nb = a.item()\nc = 2\n")
    original = FakeArm([FakeBreak(str(path), 2, "GB0059"), FakeBreak(str(path), 3, "GB0124")])
    # the fix rewrote line 2 and inserted a line above the .item(), which is still logged (now line 4)
    fixed_text = "a = 1\nguarded(a)\nnew = 0\nb = a.item()\nc = 2\n"
    fixed = FakeArm([FakeBreak(str(path), 4, "GB0124"), FakeBreak(str(path), 3, "GB0170")], {str(path): fixed_text})
    changes = hf_census.site_changes(original, fixed)
    assert changes["remaining_sites"] == [[str(path), 3, "GB0124"]]
    assert changes["new_sites"] == [[str(path), 3, "GB0170"]]  # a break on a line the fix wrote


@pytest.mark.parametrize(
    ("gb", "filename", "code", "train_only", "category"),
    [
        ("GB4347", "/t/transformers/utils/output_capturing.py", "recordable_keys = {", False, bc.CAPTURE),
        ("GB0036", "/t/modeling_mixtral.py", "expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()",
         False, bc.MOE),
        ("GB0291", "/t/modeling_led.py", "logger.warning_once(", False, bc.LOGGING),
        ("GB0170", "/t/modeling_bart.py", "if self.training and (dropout_probability < self.layerdrop):", True,
         bc.TRAINING),
        ("GB0170", "/t/modeling_reformer.py", "input_shape[-1] % least_common_mult_chunk_length != 0", False,
         bc.NUMPY),
        ("GB0124", "/t/modeling_longformer.py", "is_global_attn = is_index_global_attn.flatten().any().item()",
         False, bc.ITEM),
        ("GB4841", "/t/modeling_ctrl.py", "self.pos_encoding = self.pos_encoding.to(device=device)", False,
         bc.ATTRIBUTE),
        ("GB0033", "/t/modeling_deberta.py", "relative_pos = relative_pos[:, :, :att_span]", False, bc.SLICE),
        ("GB0036", "/t/modeling_x.py", "idx = torch.nonzero(mask)", False, bc.DYNAMIC),
        ("GB0170", "/t/modeling_x.py", "if hidden.sum() > 0:", True, bc.TRAINING),
        ("GB0170", "/t/modeling_x.py", "if hidden.sum() > 0:", False, bc.OTHER),
    ],
)
def test_sites_are_categorised_by_gb_id_file_and_code(gb: str, filename: str, code: str, train_only: bool,
                                                      category: str) -> None:
    assert bc.categorise(gb, filename, code, train_only=train_only)[0] == category


def verify_cache(before: list[list[Any]], levels: dict[str, Any]) -> dict[str, Any]:
    def breaks(sites: list[list[Any]]) -> list[dict[str, Any]]:
        return [{"filename": f, "line": line, "gb_id": gb, "reason": "r", "splits": True} for f, line, gb in sites]

    original = {"logged_sites": len(before), "graph_count": 3, "skipped_frames": [], "breaks": breaks(before),
                "fullgraph": {"passes": False, "error": "x"}}
    return {"original": original, "levels": levels}


def level(after: int, remaining: list[list[Any]], *, new: int = 0, equal: bool = True, grads: bool | None = None,
          fullgraph: bool = False, status: str = "pass") -> dict[str, Any]:
    fixed = {"logged_sites": after, "fullgraph": {"passes": fullgraph, "error": ""}, "fixes": {"f": ["GM202"]}}
    return {"status": status, "detail": "", "fixed": fixed, "outputs_equal": equal, "gradients_equal": grads,
            "remaining_sites": remaining, "new_sites": [["f", 99, "GB0059"]] * new}


def test_report_totals_categories_and_model_rows(tmp_path: Path) -> None:
    src = tmp_path / "modeling_a.py"
    src.write_text("x = y.item()\nlogger.warning('w')\n")
    a_item, a_log = [str(src), 1, "GB0124"], [str(src), 2, "GB0291"]
    eval_a = verify_cache([a_item, a_log], {"safe": None, "unsafe": level(1, [a_item])})
    train_a = verify_cache([a_item, a_log], {"safe": level(2, [a_item, a_log]),
                                             "unsafe": level(1, [], new=1, grads=False, fullgraph=False)})
    entries = [
        census_report.model_mode("a", "eval", None, eval_a, hf_census.scan_skip),
        census_report.model_mode("a", "train", None, train_a, hf_census.scan_skip),
        census_report.model_mode("b", "eval", {"arm": {"logged_sites": 0, "graph_count": 1, "breaks": [],
                                                       "skipped_frames": []}}, None, hf_census.scan_skip),
        census_report.model_mode("c", "eval", {"error": "callable failed: x"}, None, hf_census.scan_skip),
        census_report.model_mode("d", "train", None, None, hf_census.scan_skip),
    ]
    census_report.categorise_all(entries)
    assert [e.state for e in entries] == ["breaking", "breaking", "clean", hf_census.FORWARD, "not measured"]
    together = census_report.totals(entries, census_report.MODES)
    assert (together.before, together.after) == (4, {"safe": 4, "unsafe": 2})
    assert together.removed_percent("unsafe") == pytest.approx(50.0)
    assert together.gradient_changes["unsafe"] == ["a (train)"] and together.output_changes["unsafe"] == []
    rows = census_report.category_rows(entries, census_report.MODES)
    assert rows[bc.ITEM] == {"before": 2, "safe": 2, "unsafe": 1}
    assert rows[bc.LOGGING] == {"before": 2, "safe": 2, "unsafe": 0}
    assert rows[census_report.NEW] == {"before": 0, "safe": 0, "unsafe": 1}  # the new site counts against the fix
    by_mode = {row[1]: row for row in census_report.model_rows(entries)}
    assert by_mode["eval"][2] == "2 -> 2 -> 1" and by_mode["eval"][4] == "same code / yes"
    assert by_mode["train"][5] == "- / NO" and by_mode["eval"][7] == bc.ITEM
    table = census_report.totals_table(entries)
    assert "| together | unsafe | 2" in table and "4 -> 2" in table
    data = census_report.report_json(entries, {"transformers": "t"}, {})
    assert data["totals"]["eval"]["after"] == {"safe": 2, "unsafe": 1}
    json.dumps(data, default=list)


def test_static_recall_flags_a_site_inside_a_findings_span(tmp_path: Path) -> None:
    package = tmp_path / "transformers"
    model = package / "models" / "x" / "modeling_x.py"
    model.parent.mkdir(parents=True)
    model.write_text("\n" * 20)
    entries = [{"model_type": "x", "mode": "eval", "sites": [
        {"filename": str(model), "line": 5, "gb_id": "GB0170"}, {"filename": str(model), "line": 9, "gb_id": "GB0124"},
        {"filename": "/elsewhere/torch/nn/module.py", "line": 3, "gb_id": "GB0001"}]},
        {"model_type": "x", "mode": "train", "sites": [{"filename": str(model), "line": 5, "gb_id": "GB0170"}]},
        {"model_type": "y", "mode": "eval", "sites": [  # measured in another installation of the package
            {"filename": "/other/venv/site-packages/transformers/models/x/modeling_x.py", "line": 9, "gb_id": "GB0124"}]}]
    sites = static_recall.census_sites(package, entries)
    assert set(sites) == {(str(model), 5), (str(model), 9)}  # distinct, transformers files only
    assert sites[(str(model), 5)]["models"] == {"x (eval)", "x (train)"}
    assert sites[(str(model), 9)]["models"] == {"x (eval)", "y (eval)"}
    findings = [{"filename": str(model), "code": "GM101", "location": {"row": 4}, "end_location": {"row": 6}},
                {"filename": str(model), "code": "GM301", "location": {"row": 10}, "end_location": {"row": 10}}]
    assert static_recall.flagged(sites, findings) == {(str(model), 5): ["GM101"], (str(model), 9): []}


def test_the_torchvision_stub_imports_any_name_and_refuses_to_run_it() -> None:
    stub = timm_diffusers_sweep.TorchvisionStub()
    sys.meta_path.insert(0, stub)
    try:
        for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
            del sys.modules[name]
        from torchvision.ops.misc import FrozenBatchNorm2d  # type: ignore[import-not-found]
        from torchvision.transforms.functional import InterpolationMode  # type: ignore[import-not-found]

        assert InterpolationMode.BICUBIC.value == "bicubic"
        with pytest.raises(RuntimeError, match="torchvision stub"):
            FrozenBatchNorm2d(8)
    finally:
        sys.meta_path.remove(stub)
        for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
            del sys.modules[name]
