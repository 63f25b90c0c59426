"""GM517: a ``bytes`` method (``replace``, ``split``, ``strip``...) in code that torch.compile traces."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.bytes_values import refused_bytes_method
from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

NO_FIX = Fix.advice(
    "no automatic fix: work on the `str` before encoding (`text.replace(...).encode(...)` traces), or encode "
    "the text outside the compiled function and pass the token tensor in"
)
_HEADER = "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, text: str):\n"


class BytesMethod(Rule):
    """## What it does
    Flags a method call on a `bytes` object (`replace`, `split`, `strip`,
    `lower`, `startswith`, `find`, `hex`...) in code that `torch.compile`
    traces, when the object is provably bytes: a bytes literal, `bytes(...)`,
    `text.encode("utf-8")` (an `encode` given a codec name Python knows, or
    called on a string literal), a bytes method's result, or a name every
    assignment of which is one. Byte-level tokenizers do this when they turn
    a prompt into ids inside the compiled region (Dia's `[S1]`/`[S2]`
    speaker tags).

    ## Why is this bad
    Dynamo holds a `bytes` value as a constant but has no handler for its
    methods: each call ends the graph ("Unsupported method call", GB0156;
    measured, torch 2.13, every method listed above). `b.decode(...)`,
    `len(b)` and `list(b)` trace and are not flagged, nor are the same
    methods on a `str`.

    ## Example
    ```python
    byte_text = text.encode("utf-8")
    replaced = byte_text.replace(b"[S1]", b"\x01")
    tokens = torch.tensor(list(replaced))
    ```

    ## Use instead
    Do the text work on the `str`, then encode:
    ```python
    replaced = text.replace("[S1]", "\x01").encode("utf-8")
    tokens = torch.tensor(list(replaced))
    ```
    or tokenize outside the compiled function and pass the tensor in.

    ## Fix safety
    No automatic fix: replacing on the `str` gives the same bytes only when
    the old and new parts encode the same way on their own (ASCII parts in
    UTF-8 do), which the linter does not check. The diagnostic carries a
    display-only hint.
    """

    code = "GM517"
    name = "bytes-method"
    summary = "a `bytes` method in compiled code splits the graph"
    dynamo_gb = gb_types("GB0156")
    valid = (
        # str methods trace; decode and list() of bytes trace (measured)
        _HEADER + "    ids = list(text.replace('[S1]', '\\x01').encode('utf-8'))\n    return x[: len(ids)]\n",
        _HEADER + "    data = text.encode('utf-8')\n    return x * len(data.decode('utf-8'))\n",
        # a tokenizer's encode takes text, not a codec: its result is not provably bytes
        "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, tok, text: str):\n"
        "    ids = tok.encode(text)\n    return x * ids.index(2)\n",
    )
    invalid = (
        Example(_HEADER + "    data = text.encode('utf-8')\n    data = data.replace(b'[S1]', b'\\x01')\n"
                "    return x[: len(data)]\n"),
        Example(_HEADER + "    return x * len(b'a,b'.split(b','))\n"),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for call, traced, method in ctx.recognised(refused_bytes_method, nodes.Call):
            message = (
                f"`{snippet(call.func)}(...)` on `bytes` in compiled code: Dynamo has no handler for "
                f"`bytes.{method}`, so the graph breaks"
            )
            yield ctx.report(call, message, traced, NO_FIX)
