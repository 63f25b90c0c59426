"""The comparison and table of benchmarks/fixed_package_outputs.py, on hand-made saved outcomes.

No transformers here: the outcomes are shaped like what the script's child
processes ``torch.save`` (flattened outputs, gradients, an exception string),
so these tests run in milliseconds.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import fixed_package_outputs as fpo


def outcome(value: float = 1.0, grad: float | None = 2.0, error: str | None = None) -> dict[str, Any]:
    return {
        "outputs": None if error else {"out.logits": torch.tensor([value, float("nan")]), "out:type": "ModelOutput"},
        "gradients": None if error or grad is None else {"grad.w": torch.tensor([grad]), "grad.unused": None},
        "error": error,
    }


def test_identical_outcomes_are_bitwise_equal_even_with_nan() -> None:
    row = fpo.compare_outcomes("bert", "train", outcome(), outcome())
    assert (row.outputs, row.gradients, row.note) == ("bitwise", "bitwise", "")
    assert not row.differs and row.compared


def test_eval_mode_has_no_gradient_verdict() -> None:
    row = fpo.compare_outcomes("bert", "eval", outcome(grad=None), outcome(grad=None))
    assert (row.outputs, row.gradients) == ("bitwise", "-")


def test_a_tiny_difference_is_within_tolerance_and_a_large_one_differs() -> None:
    close = fpo.compare_outcomes("gpt2", "train", outcome(1.0), outcome(1.0 + 1e-7))
    assert close.outputs.startswith("within tolerance") and not close.differs
    far = fpo.compare_outcomes("gpt2", "train", outcome(1.0), outcome(1.5, grad=3.0))
    assert far.outputs.startswith("DIFFER: ") and "out.logits" in far.outputs
    assert far.gradients.startswith("DIFFER: ") and "grad.w" in far.gradients
    assert far.differs


def test_a_gradient_that_appears_only_after_the_fix_differs() -> None:
    fixed = outcome()
    fixed["gradients"]["grad.unused"] = torch.zeros(1)
    row = fpo.compare_outcomes("t5", "train", outcome(), fixed)
    assert row.outputs == "bitwise" and row.gradients.startswith("DIFFER")


def test_the_same_exception_on_both_sides_counts_as_equal() -> None:
    error = "TargetError: hf:x: invalid config"
    row = fpo.compare_outcomes("x", "train", outcome(error=error), outcome(error=error))
    assert not row.differs and row.outputs == "same exception" and error in row.note


def test_an_exception_that_changes_type_message_or_appears_differs() -> None:
    for original, fixed in (("ValueError: bad", "RuntimeError: bad"), ("ValueError: bad", "ValueError: worse"),
                            (None, "NameError: name 'torch' is not defined")):
        row = fpo.compare_outcomes("x", "eval", outcome(error=original), outcome(error=fixed))
        assert row.differs and row.outputs == "DIFFER: exception", (original, fixed)
    row = fpo.compare_outcomes("x", "eval", outcome(), outcome(error="NameError: torch"))
    assert row.note == "original: returns; fixed: NameError: torch"


def test_a_missing_outcome_is_not_compared_and_says_why() -> None:
    row = fpo.compare_outcomes("reformer", "train", outcome(), "timeout after 600 s")
    assert not row.compared and not row.differs
    assert (row.outputs, row.gradients, row.note) == ("not compared", "not compared", "fixed: timeout after 600 s")


def test_exception_messages_mask_the_package_folder() -> None:
    error = FileNotFoundError("/tmp/copy/transformers/models/x.py missing")
    assert fpo.describe(error, "/tmp/copy/transformers") == "FileNotFoundError: <transformers>/models/x.py missing"


def test_table_and_summary() -> None:
    rows = [
        fpo.compare_outcomes("bert", "eval", outcome(), outcome()),
        fpo.compare_outcomes("gpt2", "train", outcome(1.0), outcome(2.0)),
        fpo.compare_outcomes("t5", "eval", outcome(), "child exited 1: boom"),
    ]
    lines = fpo.table(rows).splitlines()
    assert lines[0] == "| model type | mode | outputs equal | gradients equal | note |"
    assert lines[2] == "| bert | eval | bitwise | - |  |"
    assert lines[3].startswith("| gpt2 | train | DIFFER: ")
    assert fpo.summary(rows) == ("3 runs: 2 compared, 1 equal (1 on real outputs, 0 only on the same exception), "
                                 "1 differ (gpt2/train), 1 not compared")


def test_summary_counts_runs_equal_only_by_the_same_exception_apart() -> None:
    error = "ValueError: fastspeech2 needs labels in training"
    rows = [
        fpo.compare_outcomes("bert", "train", outcome(), outcome()),
        fpo.compare_outcomes("fastspeech2_conformer", "train", outcome(error=error), outcome(error=error)),
    ]
    assert rows[1].exception_only and not rows[0].exception_only
    assert fpo.summary(rows) == ("2 runs: 2 compared, 2 equal (1 on real outputs, 1 only on the same exception), "
                                 "0 differ, 0 not compared")


def test_changed_files_compares_bytes_with_the_original(tmp_path: Path) -> None:
    original, copy = tmp_path / "original", tmp_path / "copy"
    for root in (original, copy):
        (root / "sub").mkdir(parents=True)
        (root / "same.py").write_text("x = 1\n")
        (root / "sub" / "fixed.py").write_text("y = 1\n")
    (copy / "sub" / "fixed.py").write_text("import torch\ny = 1\n")
    (original / "only_there.pyc").write_bytes(b"\0")
    assert fpo.changed_files(original, copy) == ["sub/fixed.py"]
