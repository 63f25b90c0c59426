"""GM501's fix: one ``torch._dynamo.config.allow_rnn = True`` line after the imports, bound wherever it runs."""

from __future__ import annotations

import textwrap

from graphmend_lint import fix_source, lint_source
from graphmend_lint.diagnostics import Applicability

LINE = "_dynamo.config.allow_rnn = True"
ENCODER = """

class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 4)
        self.head = nn.LSTM(4, 4)

    def forward(self, x):
        return self.rnn(x)[0]

    def tail(self, x):
        return self.head(x)[0]

    def both(self, x):
        return self.tail(self.forward(x))
"""


def program(imports: str, compile_line: str = "model = torch.compile(Encoder().both)") -> str:
    return textwrap.dedent(imports).lstrip() + ENCODER + "\n\n" + compile_line + "\n"


def gm501(source: str) -> list:
    return [d for d in lint_source(source, "m.py") if d.code == "GM501"]


def test_every_finding_shares_one_line_and_a_second_fix_changes_nothing() -> None:
    source = program("import torch\nfrom torch import nn\n")
    assert len(gm501(source)) == 2  # forward and tail: one finding per calling function
    fixed = fix_source(source, "m.py", unsafe=True).source
    assert fixed.count(LINE) == 1
    assert fixed.startswith("import torch\nfrom torch import nn\n\ntorch._dynamo.config.allow_rnn = True\n\n\nclass")
    assert gm501(fixed) == []
    assert fix_source(fixed, "m.py", unsafe=True).source == fixed
    assert fix_source(source, "m.py", unsafe=False).source == source  # unsafe: plain --fix leaves it


def test_an_alias_of_torch_is_used() -> None:
    fixed = fix_source(program("import torch as T\nfrom torch import nn\n", "m = T.compile(Encoder().both)"), "m.py",
                       unsafe=True).source
    assert "\nT._dynamo.config.allow_rnn = True\n" in fixed and "import torch\n" not in fixed


def test_import_torch_is_added_when_only_from_imports_bind_names() -> None:
    source = program("from torch import compile, nn\n", "model = compile(Encoder().both)")
    fixed = fix_source(source, "m.py", unsafe=True).source
    assert fixed.startswith("from torch import compile, nn\nimport torch\n\ntorch._dynamo.config.allow_rnn = True\n")
    compile(fixed, "m.py", "exec")  # the fixed module still parses (a SyntaxError fails the test)


def test_no_line_where_torch_is_bound_only_after_the_leading_imports() -> None:
    """The line goes after the leading imports; a `torch` bound later (here in a `try`) is not bound there yet."""
    source = program("import os\ntry:\n    import torch\n    from torch import nn\nexcept ImportError:\n    raise\n")
    findings = gm501(source)
    assert findings and all(d.fix.applicability is Applicability.DISPLAY_ONLY for d in findings)
