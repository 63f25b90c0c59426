"""Following a NumPy result into the callables of the file it is passed to."""

from __future__ import annotations

import astroid
from astroid import nodes

from graphmend_lint.analysis.numpy_on_tensors import _parameter_for


def test_a_callee_whose_arguments_astroid_does_not_know_binds_nothing() -> None:
    """astroid leaves ``args`` as ``None`` on some functions; GM519 crashed on one in a held-out program."""
    module = astroid.parse("def helper(t):\n    return t.clone()\n\nhelper(x)\n")
    helper = module.body[0]
    assert isinstance(helper, nodes.FunctionDef)
    call = module.body[1].value
    assert _parameter_for(call, 0) is helper.args.args[0]
    helper.args.args = None
    assert _parameter_for(call, 0) is None
