"""The acid-test reader: only programs whose every logged line got an applied fix count, and fullgraph decides."""

from __future__ import annotations

from pathlib import Path

from tests.corpus.acid import acid
from tests.corpus.layout import Program

PROGRAM = "import torch\n\n\n@torch.compile\ndef f(x):\n    print('x', x)\n    return x.sum().item()\n"


def answer(sites: list[list[object]], fullgraph_after: list[str | None]) -> dict[str, object]:
    original = {"error": None, "sites": sites, "fullgraph": ["broke"]}
    return {"original": original, "variants": {"safe": {**original, "fullgraph": fullgraph_after}}}


def test_only_programs_with_every_logged_line_fixed_count(tmp_path: Path) -> None:
    path = tmp_path / "prog_print_only.py"
    path.write_text(PROGRAM, encoding="utf-8")
    program = Program(path)
    printed = [[6, "GB0059", "print"]]
    assert acid([program], {program.name: answer(printed, [None])}, "safe") == (1, [])
    assert acid([program], {program.name: answer(printed, ["still breaks"])}, "safe") == (1, [program.name])
    with_item = [*printed, [7, "GB0124", "item"]]  # `.item()` gets no safe fix: the program is not eligible
    assert acid([program], {program.name: answer(with_item, ["still breaks"])}, "safe") == (0, [])
    assert acid([program], {}, "safe") == (0, [])
