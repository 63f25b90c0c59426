"""GM521: sparse tensors built or read in code that torch.compile traces."""

from __future__ import annotations

import re
from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.analysis.lookup import runs_before
from graphmend_lint.analysis.scope import TracedFunction
from graphmend_lint.analysis.sparse_tensors import SPARSE_BUILDERS, sparse_tensors
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

#: How a file spells a sparse constructor: a cheap filter before every read of its traced code is resolved.
_BUILDS_SPARSE = re.compile(r"sparse_(?:coo|csr|csc|bsr|bsc|compressed)_tensor|sparse\.[A-Z][a-z]*Tensor|\.to_sparse")
NO_FIX = Fix.advice(
    "no automatic fix: keep sparse tensors out of the compiled function: compile the dense layers and call "
    "`torch.sparse.mm` / `torch.spmm` outside, or pass a dense matrix (`adj.to_dense()`)"
)
_GCN = (
    "import torch\nfrom torch import nn\n\n\nclass GraphConv(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.weight = nn.Parameter(torch.randn(4, 4))\n\n"
    "    def forward(self, x, adj):\n        return {body}\n\n\n"
)


class SparseTensorInCompiledCode(Rule):
    """## What it does
    Flags sparse tensors in code that `torch.compile` traces: a call that
    builds one (`torch.sparse_coo_tensor`, `torch.sparse_csr_tensor` and the
    other `sparse_*_tensor` constructors, the legacy `torch.sparse.FloatTensor`
    family), and the first use, on each path through a function, of a value
    that is one wherever the file builds it: a global adjacency matrix, a
    name bound to a constructor or to a tensor's `to_sparse()` (or
    `to_sparse_csr()`, ...; GM507 reports the conversion itself), an item of
    a helper's returned tuple
    (pygcn's `adj, features, labels = load_data()`), `self.adj`, or a
    parameter every call site in the file gives one (the adjacency passed
    down through each graph layer).

    ## Why is this bad
    Dynamo does not support sparse tensors. A constructor breaks at the call
    (GB0007 for `sparse_coo_tensor` and `torch.sparse.FloatTensor`, GB0374
    for `sparse_csr_tensor`), and a sparse tensor breaks where code first
    uses it (GB0015, "Attempted to wrap sparse Tensor"), after which Dynamo
    runs the rest of that function eagerly, so later reads on the same path
    are not reported (measured, torch 2.13). Dynamo wraps values lazily:
    `adj = self.adj` only names it, and a call wraps its arguments when it
    runs, after all of them, so the finding is where the name is used, or at
    the call, or at an argument that uses the tensor first (NGCF's
    `self.sparse_dropout(self.adj, ..., self.adj._nnz())` breaks at the
    `_nnz()` read). Each layer that receives the
    adjacency breaks again in its own frame. `x.to_sparse()` is GM507's.

    ## Example
    ```python
    adj = torch.sparse_coo_tensor(indices, values, (n, n))

    class GraphConv(nn.Module):
        def forward(self, x, adj):
            return torch.spmm(adj, x @ self.weight)

    model = torch.compile(GraphConv())
    model(x, adj)
    ```

    ## Use instead
    Compile the dense part and keep the sparse product outside, or pass a
    dense adjacency where it is small:
    ```python
    class GraphConv(nn.Module):
        def forward(self, x, adj):
            return adj @ (x @ self.weight)   # adj.to_dense() passed in
    ```

    ## Fix safety
    No automatic fix: where the sparse product should run is a design choice,
    and a dense matrix costs memory. The diagnostic carries a display-only
    hint.
    """

    code = "GM521"
    name = "sparse-tensor-in-compiled-code"
    summary = "sparse tensors are not supported by torch.compile: building or reading one breaks the graph"
    dynamo_gb = gb_types("GB0015", "GB0007", "GB0374")
    valid = (
        # a dense adjacency
        _GCN.format(body="adj @ (x @ self.weight)")
        + "adj = torch.eye(4)\nmodel = torch.compile(GraphConv())\nmodel(torch.randn(4, 4), adj)\n",
        # the sparse tensor is built and used outside the compiled function
        "import torch\n\nadj = torch.sparse_coo_tensor([[0], [1]], [1.0], (2, 2))\n\n\ndef f(x):\n"
        "    return torch.sparse.mm(adj, x)\n\n\n@torch.compile\ndef g(x):\n    return x * 2\n",
    )
    invalid = (
        Example(
            _GCN.format(body="torch.spmm(adj, x @ self.weight)")
            + "adj = torch.sparse_coo_tensor([[0, 1], [1, 2]], [1.0, 2.0], (4, 4))\n"
            "model = torch.compile(GraphConv())\nmodel(torch.randn(4, 4), adj)\n"
        ),
        Example("import torch\n\n\n@torch.compile\ndef f(x, i, v):\n    a = torch.sparse_coo_tensor(i, v, (4, 4))\n"
                "    return torch.sparse.mm(a, x)\n"),
        # pytorch#164823: a tensor's `to_sparse()` (GM507 at the call, GB0277), then its use (GB0015, measured)
        Example("import torch\n\n\n@torch.compile\ndef f(x):\n    s = x.to_sparse()\n    return s * 2\n"),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        if not _BUILDS_SPARSE.search(ctx.analysis.source.text):
            return  # the resolver only knows sparse tensors this file builds
        for call, traced in ctx.traced_nodes(nodes.Call):
            builder = ctx.values.qualified_name(call.func)
            if builder in SPARSE_BUILDERS:
                message = f"`{snippet(call.func)}(...)` builds a sparse tensor in compiled code: Dynamo does not trace it"
                yield ctx.report(call, message, traced, NO_FIX)
        sparse = sparse_tensors(ctx.analysis)
        reads: list[tuple[nodes.NodeNG, nodes.NodeNG, TracedFunction]] = []
        for node, traced in ctx.traced_nodes(nodes.Name, nodes.Attribute):
            if ctx.values.qualified_name(node) in SPARSE_BUILDERS or not sparse.is_sparse(node):
                continue  # the constructor itself is no sparse tensor (the resolver names both alike)
            realized = _realized_at(node)
            if realized is not None:
                reads.append((realized, node, traced))
        reported: list[nodes.NodeNG] = []
        for realized, node, traced in sorted(reads, key=lambda read: _evaluated(read[0])):
            if any(earlier.frame() is realized.frame() and runs_before(earlier, realized) for earlier in reported):
                continue  # Dynamo ran the rest of the function eagerly after the earlier break
            reported.append(realized)
            message = f"`{snippet(node)}` is a sparse tensor: Dynamo cannot wrap it and runs the function eagerly from here"
            yield ctx.report(realized, message, traced, NO_FIX)


def _realized_at(read: nodes.NodeNG) -> nodes.NodeNG | None:
    """Where Dynamo first needs the sparse tensor *read* gives, and breaks: ``None`` when nothing does yet.

    Dynamo wraps a value lazily (measured, torch 2.13): ``a = self.adj`` only names it, and the break
    comes where ``a`` is used; an argument is wrapped when the call runs, after every argument, so in
    NGCF's ``self.sparse_dropout(self.adj, ..., self.adj._nnz())`` the ``_nnz()`` read breaks first,
    on its own line. Any other use (an attribute of it, an operator, a ``return``) wraps it there.
    """
    parent = read.parent
    if isinstance(parent, nodes.Assign) and parent.value is read and all(isinstance(t, nodes.AssignName) for t in parent.targets):
        return None  # the names bound are read (and reported) where they are used
    if isinstance(parent, (nodes.For, nodes.Comprehension)) and parent.iter is read:
        return None  # ``for support in self.supports``: each item is wrapped where the loop uses it (DCRNN)
    if isinstance(parent, nodes.Call) and read in parent.args:
        return parent
    if isinstance(parent, nodes.Keyword) and isinstance(parent.parent, nodes.Call):
        return parent.parent
    return read


def _evaluated(node: nodes.NodeNG) -> tuple[int, int]:
    """When *node* is done in source order: a call after its arguments, anything else where it starts."""
    if isinstance(node, nodes.Call):
        return node.end_lineno or node.lineno, node.end_col_offset or 0
    return node.lineno, node.col_offset
