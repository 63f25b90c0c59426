"""libcst parses only the function a fix rewrites: positions, indentation and printing stay the file's."""

from __future__ import annotations

import ast
import textwrap

import libcst as cst

from graphmend_lint import fix_source
from graphmend_lint.diagnostics import Position
from graphmend_lint.fixes.cst_index import CstIndex

NESTED_WITH_TABS = (
    "import torch\n"
    "\n"
    "try:\n"
    "\timport numpy\n"
    "except ImportError:\n"
    "\tif True:\n"
    "\t\tclass Block(torch.nn.Module):\n"
    "\t\t\tdef forward(self, x):\n"
    "\t\t\t\ty = x * 2\n"
    "\t\t\t\tprint('y', y.shape)  # keep this comment\n"
    "\t\t\t\treturn y + 1\n"
    "\n"
    "compiled = torch.compile(Block())\n"
)


def test_a_method_nested_in_try_and_if_with_tab_indentation_is_deferred_in_place():
    result = fix_source(NESTED_WITH_TABS, unsafe=True)
    assert [d.code for d in result.applied] == ["GM201"]
    expected = NESTED_WITH_TABS.replace(
        "\t\t\t\tprint('y', y.shape)  # keep this comment\n\t\t\t\treturn y + 1\n",
        "\t\t\t\t_gm_ret = y + 1\n\t\t\t\tprint('y', y.shape)  # keep this comment\n\t\t\t\treturn _gm_ret\n",
    )
    assert result.source == expected
    ast.parse(result.source)


def test_printed_instead_cuts_the_replacement_out_of_a_part_of_a_file():
    # lines 10-13 of some file, under a stand-in header for the class around them
    text = textwrap.dedent("""\
        if True:
            def f(x):
                y = x
                return y
    """)
    index = CstIndex.parse(text, line_offset=9)
    function = index.smallest_around(Position(11, 4), Position(11, 4), cst.FunctionDef)
    assert function is not None and index.span(function)[0] == Position(11, 4)
    renamed = function.with_changes(name=cst.Name("g"))
    assert index.printed_instead(function, renamed) == "def g(x):\n        y = x\n        return y"
