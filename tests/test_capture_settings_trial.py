"""benchmarks/capture_settings_trial.py: where the switches go, and how the summary counts (no Dynamo run here)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import capture_settings_trial as trial


def test_switches_go_after_the_last_top_level_import() -> None:
    source = '"""doc"""\nimport torch\nfrom torch import nn\n\nX = 1\n\ndef f():\n    import numpy\n'
    switched = trial.with_switches(source)
    ast.parse(switched)
    lines = switched.splitlines()
    assert lines[3:5] == [
        "torch._dynamo.config.capture_scalar_outputs = True",
        "torch._dynamo.config.capture_dynamic_output_shape_ops = True",
    ]
    assert lines[:3] == source.splitlines()[:3] and lines[5:] == source.splitlines()[3:]


def test_summary_separates_zero_sites_from_fullgraph() -> None:
    rows = [
        {"program": "a", "sites": [2, 0], "fullgraph": [True, True]},
        {"program": "b", "sites": [1, 0], "fullgraph": [False, False]},
        {"program": "c", "sites": [1, 2], "fullgraph": [False, False]},
    ]
    text = trial.summary(rows)
    assert "logged sites: 4 -> 2" in text
    assert "fullgraph passes: 1 -> 1" in text
    assert "programs going to 0 logged sites: 2, of which still failing fullgraph: 1" in text
    assert "programs with more logged sites: 1" in text
