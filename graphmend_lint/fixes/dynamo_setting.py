"""Turn a ``torch._dynamo.config`` switch on for a module, with one line after its imports.

Some breaks are Dynamo refusing a construct by default, not something it
cannot trace: ``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN`` (GB0014) are traced once
``torch._dynamo.config.allow_rnn`` is set. The setting only changes what
Dynamo does, so eager runs are untouched; but it is process-wide, so the fix
is a single module-level line a reviewer sees at the top of the file, not an
edit at each call site, and every finding in the file shares that one edit.

The line goes right after the docstring and the leading imports, where the
module's ``import torch`` (or its alias) is bound; when only ``from torch
import ...`` is there, ``import torch`` is added with it (see
:mod:`graphmend_lint.fixes.torch_name`). :mod:`graphmend_lint.analysis.dynamo_settings`
reads the line back, so the rule goes quiet and a second ``--fix`` changes
nothing.
"""

from __future__ import annotations

from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix
from graphmend_lint.fixes.torch_name import after_leading_imports, torch_name_at


def _bound_before(analysis: FileAnalysis, name: str, line: int) -> bool:
    """A module-level binding of *name* runs before *line* (an ``import torch`` further down would not)."""
    try:
        _, bindings = analysis.module.scope_lookup(analysis.module, name)
    except Exception:  # astroid lookups can fail on odd code: then nothing is known to be bound
        return False
    return any(binding.lineno < line for binding in bindings)


def enable_setting_fix(analysis: FileAnalysis, setting: str, message: str) -> Fix | None:
    """``torch._dynamo.config.<setting> = True`` after the module's imports, as an unsafe fix.

    ``None`` when no name is safely bound to torch at module level by then
    (see :func:`~graphmend_lint.fixes.torch_name.torch_name_at`; a module that
    imports torch only inside functions gets no top-level line).
    """
    position = after_leading_imports(analysis)
    torch = torch_name_at(analysis, analysis.module)
    if torch is None or not (torch.edits or _bound_before(analysis, torch.name, position.line)):
        return None
    # torch_name_at's own `import torch`, when it needs one, goes to this same point: write both as one edit.
    imports = "".join(edit.content for edit in torch.edits)
    gap = "\n" if not analysis.source.line(position.line).strip() else ""
    content = f"{imports}{gap}{torch.name}._dynamo.config.{setting} = True\n"
    return Fix(edits=(Edit(position, position, content),), applicability=Applicability.UNSAFE, message=message)
