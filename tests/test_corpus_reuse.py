"""``--reuse-truth``: an earlier Dynamo measurement is reused only for the very text it measured."""

from __future__ import annotations

import json
from pathlib import Path

from tests.corpus import layout
from tests.corpus.run import _reused_answers

PROGRAM = "import torch\n\n\n@torch.compile\ndef f(x):\n    print(x)\n    return x\n"


def _earlier(tmp_path: Path, answers: dict[str, dict]) -> Path:
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps({"answers": answers}))
    return path


def _answer(name: str, digest: str) -> dict:
    return {"name": name, "digest": digest, "lint": {"compiled": [], "modules": []}, "original": {"error": None, "sites": []}}


def test_only_unchanged_programs_are_reused_and_linted_again(tmp_path: Path) -> None:
    same, edited = tmp_path / "same.py", tmp_path / "edited.py"
    same.write_text(PROGRAM)
    edited.write_text(PROGRAM)
    programs = [layout.Program(same), layout.Program(edited)]
    earlier = _earlier(
        tmp_path,
        {"same": _answer("same", programs[0].digest), "edited": _answer("edited", programs[1].digest)},
    )
    edited.write_text(PROGRAM + "\n\nx = 1\n")

    reused = _reused_answers(earlier, programs)

    assert set(reused) == {"same"}
    assert reused["same"]["lint"]["compiled"] == [(6, "GM201")]  # linted now, not the earlier empty answer


def test_an_earlier_failure_is_measured_again(tmp_path: Path) -> None:
    path = tmp_path / "crashed.py"
    path.write_text(PROGRAM)
    program = layout.Program(path)
    crashed = {**_answer("crashed", program.digest), "original": {"error": "ImportError: no module"}}
    assert _reused_answers(_earlier(tmp_path, {"crashed": crashed}), [program]) == {}
