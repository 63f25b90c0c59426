"""The table code of ``benchmarks/layerdrop_train.py`` on hand-made verify JSON (no Dynamo)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import layerdrop_train  # noqa: E402


def arm(breaks: list[tuple[str, int, str]], passes: bool) -> dict[str, Any]:
    return {
        "logged_sites": len(breaks),
        "breaks": [{"filename": f, "line": line, "gb_id": gb, "reason": "", "splits": True} for f, line, gb in breaks],
        "fullgraph": {"passes": passes, "error": None if passes else "Unsupported"},
    }


def test_a_row_counts_layerdrop_sites_by_the_draw_before_them(tmp_path: Path) -> None:
    model = tmp_path / "modeling_x.py"
    model.write_text(
        "for layer in layers:\n"
        "    if training:\n"
        "        p = torch.rand([])\n"
        "        if p < layerdrop:\n"
        "            continue\n"
        "    if h.sum() > 0:\n"
        "        h = layer(h)\n"
    )
    before = arm([(str(model), 4, "GB0170"), (str(model), 6, "GB0170"), (str(model), 7, "GB0124")], False)
    after = arm([(str(model), 9, "GB0170")], False)
    result = {"original": before, "fixed": after, "outputs_equal": True, "gradients_equal": True, "status": "pass"}
    assert layerdrop_train.row("x", result) == ["x", "3 -> 1", "1 -> 1", "yes / yes", "NO -> NO", "pass"]


def test_a_type_that_did_not_build_says_why() -> None:
    result = {"original": None, "fixed": None, "detail": "cannot build AutoModel", "status": "error"}
    assert layerdrop_train.row("x", result)[-1] == "not measured: cannot build AutoModel"
    assert layerdrop_train.row("x", None)[-1] == "not measured: no result"


def test_every_layerdrop_field_is_set_to_one_half() -> None:
    options = layerdrop_train.arguments(())
    assert options[0] == "--train"
    assert [options[i + 1] for i, o in enumerate(options) if o == "--hf-config"] == [
        f"{field}=0.5" for field in layerdrop_train.LAYERDROP_FIELDS
    ]
