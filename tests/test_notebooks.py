"""Jupyter notebooks end to end, through the real command line.

The notebooks here are written as JSON text by hand, in layouts Jupyter does
not use (indent 3, escaped non-ASCII, a float no Python ``json.dumps``
reproduces), so that "bytes outside the edited cell are identical" is tested
against a file no re-serialisation could give back.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import PRINT_PROGRAM, run_cli, write

BREAK = "GM201 `print()` in compiled code causes a graph break"

#: Cell 1 markdown, cell 2 defines `helper` (with a print), cell 3 is a `%%` cell magic, cell 4 compiles `helper`.
#: Indent 3, `\u00e9` escaped, a `0.00001` float in the metadata and outputs kept.
NOTEBOOK = r"""{
   "cells": [
      {
         "cell_type": "markdown",
         "metadata": {},
         "source": [
            "# Caf\u00e9 model\n"
         ]
      },
      {
         "cell_type": "code",
         "execution_count": 1,
         "id": "c2",
         "metadata": {"tags": ["keep"], "timing": 0.00001},
         "outputs": [
            {
               "name": "stdout",
               "output_type": "stream",
               "text": ["hello\n"]
            }
         ],
         "source": [
            "%matplotlib inline\n",
            "import torch\n",
            "\n",
            "def helper(x):\n",
            "    y = x * 2\n",
            "    print(\"y:\", y.data)\n",
            "    return y.relu()"
         ]
      },
      {
         "cell_type": "code",
         "execution_count": 2,
         "id": "c3",
         "metadata": {},
         "outputs": [],
         "source": "%%time\nprint(1)"
      },
      {
         "cell_type": "code",
         "execution_count": 3,
         "id": "c4",
         "metadata": {"scrolled": true},
         "outputs": [
            {
               "data": {"text/plain": ["tensor([0., 2., 4.])"]},
               "execution_count": 3,
               "metadata": {},
               "output_type": "execute_result"
            }
         ],
         "source": [
            "!pip list\n",
            "files = !ls\n",
            "step = torch.compile(helper)\n",
            "step(torch.arange(3.0))"
         ]
      }
   ],
   "metadata": {
      "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
      "language_info": {"name": "python"}
   },
   "nbformat": 4,
   "nbformat_minor": 5
}
"""

OLD_PRINT_LINE = '            "    print(\\"y:\\", y.data)\\n",\n'
NEW_PRINT_LINES = (
    '            "    if not torch.compiler.is_compiling():\\n",\n'
    '            "        print(\\"y:\\", y.data)\\n",\n'
)


def write_notebook(root: Path, name: str, text: str = NOTEBOOK) -> Path:
    path = root / name
    path.write_text(text, encoding="utf-8")
    return path


def test_lint_reports_cell_and_line_with_compile_in_a_later_cell(project: Path) -> None:
    write_notebook(project, "nb.ipynb")
    result = run_cli("nb.ipynb", "--no-cache", cwd=project)
    assert result.code == 1, result.err
    assert result.out.splitlines()[0] == f"nb.ipynb:cell 2:6:5: {BREAK}"


def test_directories_include_notebooks(project: Path) -> None:
    (project / "notebooks").mkdir()
    write_notebook(project, "notebooks/nb.ipynb")
    write(project, "model.py", PRINT_PROGRAM)
    result = run_cli(".", "--no-cache", cwd=project)
    lines = [line for line in result.out.splitlines() if "GM201" in line]
    assert lines == [f"model.py:7:5: {BREAK}", f"notebooks/nb.ipynb:cell 2:6:5: {BREAK}"]


def test_full_output_quotes_the_cell_and_the_compile_site_by_cell(project: Path) -> None:
    write_notebook(project, "nb.ipynb")
    result = run_cli("nb.ipynb", "--no-cache", "--output-format", "full", cwd=project)
    assert '6 |     print("y:", y.data)' in result.out
    assert "= in compile scope: nb.ipynb:cell 4:3 torch.compile(helper) -> helper" in result.out


def test_json_rows_carry_the_cell(project: Path) -> None:
    write_notebook(project, "nb.ipynb")
    write(project, "model.py", PRINT_PROGRAM)
    result = run_cli("nb.ipynb", "model.py", "--no-cache", "--output-format", "json", cwd=project)
    rows = {row["filename"]: row for row in json.loads(result.out)}
    assert rows["nb.ipynb"]["cell"] == 2
    assert rows["nb.ipynb"]["location"] == {"row": 6, "column": 5}
    assert rows["nb.ipynb"]["fix"]["edits"][0]["location"] == {"row": 6, "column": 5}
    assert rows["model.py"]["cell"] is None


def test_fix_edits_only_the_cell_source_and_keeps_every_other_byte(project: Path) -> None:
    notebook = write_notebook(project, "nb.ipynb")
    result = run_cli("nb.ipynb", "--no-cache", "--fix", "--unsafe-fixes", cwd=project)
    assert result.code == 0, result.out + result.err
    assert notebook.read_text(encoding="utf-8") == NOTEBOOK.replace(OLD_PRINT_LINE, NEW_PRINT_LINES)
    again = run_cli("nb.ipynb", "--no-cache", "--fix", "--unsafe-fixes", cwd=project)
    assert again.code == 0 and "All checks passed!" in again.out
    assert notebook.read_text(encoding="utf-8") == NOTEBOOK.replace(OLD_PRINT_LINE, NEW_PRINT_LINES)


def test_fix_keeps_magics_outputs_and_metadata(project: Path) -> None:
    notebook = write_notebook(project, "nb.ipynb")
    before = json.loads(NOTEBOOK)
    run_cli("nb.ipynb", "--no-cache", "--fix", "--unsafe-fixes", cwd=project)
    after = json.loads(notebook.read_text(encoding="utf-8"))
    assert after["cells"][1]["source"][0] == "%matplotlib inline\n"
    assert after["cells"][2] == before["cells"][2] and after["cells"][3] == before["cells"][3]
    for key in ("outputs", "metadata", "execution_count", "id"):
        assert after["cells"][1][key] == before["cells"][1][key]
    assert after["metadata"] == before["metadata"]


def test_fix_of_a_cell_whose_source_is_one_string_stays_one_string(project: Path) -> None:
    cells = [{"cell_type": "code", "execution_count": None, "id": "x", "metadata": {}, "outputs": [],
              "source": PRINT_PROGRAM.rstrip("\n")}]
    text = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"
    notebook = write_notebook(project, "one.ipynb", text)
    result = run_cli("one.ipynb", "--no-cache", "--fix", "--unsafe-fixes", cwd=project)
    assert result.code == 0, result.out + result.err
    source = json.loads(notebook.read_text())["cells"][0]["source"]
    assert isinstance(source, str) and "if not torch.compiler.is_compiling():" in source
    assert not source.endswith("\n"), "the cell had no final newline and must not gain one"


def test_noqa_in_a_cell_suppresses(project: Path) -> None:
    write_notebook(project, "nb.ipynb", NOTEBOOK.replace('y.data)\\n"', 'y.data)  # noqa: GM201\\n"'))
    result = run_cli("nb.ipynb", "--no-cache", cwd=project)
    assert result.code == 0, result.out + result.err


def test_broken_notebook_is_named_and_other_files_still_lint(project: Path) -> None:
    write_notebook(project, "broken.ipynb", NOTEBOOK.replace('"cell_type": "markdown",', '"cell_type": "markdown"'))
    write(project, "model.py", PRINT_PROGRAM)
    result = run_cli(".", "--no-cache", cwd=project)
    assert result.code == 1
    assert "graphmend-lint: error: broken.ipynb: not a notebook, invalid JSON: Expecting ',' delimiter" in result.err
    assert f"model.py:7:5: {BREAK}" in result.out
    assert "1 path could not be checked" in result.out


def test_invalid_notebook_schema_is_named(project: Path) -> None:
    write_notebook(project, "bad.ipynb", json.dumps({"cells": [{"cell_type": "code"}], "nbformat": 4, "nbformat_minor": 5}))
    result = run_cli("bad.ipynb", "--no-cache", cwd=project)
    assert result.code == 1
    assert "graphmend-lint: error: bad.ipynb: invalid notebook:" in result.err


def test_without_nbformat_notebooks_are_named_with_the_install_command(project: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "no-nbformat"
    write(blocker, "nbformat/__init__.py", "raise ImportError('nbformat is blocked for this test')\n")
    write_notebook(project, "nb.ipynb")
    write(project, "model.py", PRINT_PROGRAM)
    result = run_cli(".", "--no-cache", cwd=project, env={"PYTHONPATH": str(blocker)})
    assert result.code == 1
    assert (
        "graphmend-lint: error: nb.ipynb: linting notebooks needs nbformat; "
        "install it with `pip install 'graphmend-lint[notebooks]'`" in result.err
    )
    assert f"model.py:7:5: {BREAK}" in result.out


def code_notebook(*sources: str) -> str:
    """A notebook (Jupyter's own layout: indent 1) of code cells with these sources, as lists of lines."""
    cells = [
        {"cell_type": "code", "execution_count": None, "id": f"c{index}", "metadata": {}, "outputs": [],
         "source": source.splitlines(keepends=True)}
        for index, source in enumerate(sources)
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


BRANCH_CELL = """!uv pip install -q \\
    torch numpy
import torch
%time x = torch.ones(2)

@torch.compile
def f(x):
    if x.sum() > 0:
        return x + 1
    return x - 1"""


def test_safe_gm101_fix_in_a_cell_with_magics_keeps_them_verbatim(project: Path) -> None:
    notebook = write_notebook(project, "branch.ipynb", code_notebook("f?\nimport os", BRANCH_CELL, "f(x)"))
    lint = run_cli("branch.ipynb", "--no-cache", cwd=project)
    assert lint.out.splitlines()[0].startswith("branch.ipynb:cell 2:8:8: GM101 [*] branch on a tensor value")
    result = run_cli("branch.ipynb", "--no-cache", "--fix", cwd=project)
    assert result.code == 0, result.out + result.err
    cells = json.loads(notebook.read_text())["cells"]
    fixed = "".join(cells[1]["source"])
    assert fixed == BRANCH_CELL.split("    if x.sum()")[0] + "    return torch.where(x.sum() > 0, x + 1, x - 1)"
    assert cells[0]["source"] == ["f?\n", "import os"] and cells[2]["source"] == ["f(x)"]


def test_standard_input_named_as_a_notebook_is_refused_clearly(project: Path) -> None:
    result = run_cli("--stdin-filename", "nb.ipynb", cwd=project, stdin=NOTEBOOK)
    assert result.code == 1
    assert "graphmend-lint: error: nb.ipynb: notebooks are linted from files, not from standard input" in result.err


def test_a_fixed_module_that_loses_a_cell_boundary_or_a_magic_is_never_written() -> None:
    from graphmend_lint.notebook import Notebook, NotebookError

    notebook = Notebook.parse("nb.ipynb", NOTEBOOK)
    module = notebook.module
    assert notebook.with_module(module) == NOTEBOOK
    merged = module.replace("# graphmend-lint cell 4\n", "")
    without_magic = module.replace("pass  # %matplotlib inline\n", "")
    for broken in (merged, without_magic):
        with pytest.raises(NotebookError, match="nb.ipynb: .*fix not written"):
            notebook.with_module(broken)


def test_a_baseline_keys_notebook_findings_by_their_cell_line_and_survives_a_new_cell(project: Path) -> None:
    write_notebook(project, "nb.ipynb")
    assert run_cli("nb.ipynb", "--no-cache", "--write-baseline", "baseline.json", cwd=project).code == 0
    stored = json.loads((project / "baseline.json").read_text(encoding="utf-8"))
    assert [f["source"] for f in stored["findings"]] == ['print("y:", y.data)']  # the cell's line, not the JSON's
    shifted = json.loads(NOTEBOOK)
    shifted["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": ["# new first cell\n"]})
    write_notebook(project, "nb.ipynb", json.dumps(shifted, indent=1))
    result = run_cli("nb.ipynb", "--no-cache", "--baseline", "baseline.json", cwd=project)
    assert result.code == 0 and "GM201" not in result.out, result.out + result.err


def test_add_noqa_leaves_a_notebook_alone_and_says_so(project: Path) -> None:
    path = write_notebook(project, "nb.ipynb")
    result = run_cli("nb.ipynb", "--no-cache", "--add-noqa", cwd=project)
    assert path.read_text(encoding="utf-8") == NOTEBOOK
    assert result.code == 1 and "nb.ipynb: --add-noqa does not edit notebooks yet" in result.err
