"""Linting never imports torch: with torch made unimportable, the results are identical."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BLOCK_TORCH = """
import sys
class _NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is blocked in this test")
        return None
sys.meta_path.insert(0, _NoTorch())
from graphmend_lint.cli import main
code = main(sys.argv[1:])
assert not any(m == "torch" or m.startswith("torch.") for m in sys.modules), "torch was imported"
raise SystemExit(code)
"""


def _lint(*prefix: str) -> tuple[int, list[dict]]:
    args = [str(REPO / "rules"), str(REPO / "examples"), "--output-format", "json", "--no-cache", "--jobs", "1"]
    completed = subprocess.run(
        [sys.executable, *prefix, *args], capture_output=True, text=True, cwd=REPO, timeout=600
    )
    assert "Traceback" not in completed.stderr, completed.stderr
    return completed.returncode, json.loads(completed.stdout)


def test_results_identical_without_torch() -> None:
    with_torch = _lint("-m", "graphmend_lint")
    without_torch = _lint("-c", BLOCK_TORCH)
    assert with_torch[1], "the catalog must produce findings"
    assert without_torch == with_torch
