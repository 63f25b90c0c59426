"""GM519: a NumPy function of a tensor, used as a tensor, in traced code."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.analysis.numpy_on_tensors import numpy_on_tensor
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic
from graphmend_lint.fixes.numpy_on_tensor import torch_twin_fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

_HEADER = "import numpy as np\nimport torch\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"


class NumpyOnTensor(Rule):
    """## What it does
    Flags a NumPy function (`np.sqrt`, `np.log`, `np.exp`, `np.abs`,
    `np.clip`, `np.cumprod`, `np.maximum`...) applied to a tensor in code
    that `torch.compile` traces, when its result is then used as a tensor:
    a tensor method that NumPy arrays do not have (`.clone()`, `.to()`,
    `.float()`, `.detach()`, `.unsqueeze()`, `.numel()`, `.view()`) is
    called on it, directly, after indexing or arithmetic with non-tensors,
    through a variable, or inside a function or lambda of the same file it
    is passed to (Latent Diffusion's DDIM sampler:
    `to_torch(np.sqrt(alphas_cumprod.cpu()))` with
    `to_torch = lambda x: x.clone().detach().to(torch.float32)`).

    ## Why is this bad
    Eagerly, NumPy on a CPU tensor returns a tensor (`Tensor.__array_wrap__`
    wraps the result). Dynamo traces NumPy through `torch._numpy`, so the
    same call is an ndarray there, and a tensor-only method on it fails the
    compilation: "RuntimeError when making fake tensor call" (GB4315). That
    is an error, not a graph break: `torch.compile` raises with or without
    `fullgraph=True` (measured on torch 2.13 for `sqrt`, `log`, `abs`,
    `clip`, `cumprod`, `maximum`). A result that only feeds arithmetic with
    a tensor, a torch function (`torch.relu(np.sqrt(x))`), an array method
    (`.reshape`, `.sum()`) or is returned traces and is not flagged
    (returned, it is an ndarray under compile and a tensor eagerly).

    ## Example
    ```python
    @torch.compile
    def f(x):
        return np.sqrt(x).clone()
    ```

    ## Use instead
    ```python
    return torch.sqrt(x).clone()
    ```

    ## Fix safety
    The fix swaps the NumPy function for its torch twin (`np.arcsin` →
    `torch.asin`, `np.negative` → `torch.neg`; `import torch` is added when
    missing). **Safe** for `abs`, `negative`, `square`, `floor`, `ceil`,
    `trunc`, `sign`, `reciprocal` and `clip` (with Python-number bounds) on
    a tensor provably floating: the values are bitwise NumPy's (measured).
    **Unsafe** otherwise: torch's `sqrt`, `exp`, `log` and trigonometry
    differ from NumPy's in the last bit on some elements, and on an integer
    tensor NumPy promotes to float64 (`np.sqrt`, `np.floor`) where torch
    gives float32 or keeps the integer dtype. Under `torch.compile` the
    values were torch's already. `np.maximum`, `np.minimum`, `np.power`,
    `np.cumprod` and `np.cumsum` get a display-only hint.
    """

    code = "GM519"
    name = "numpy-on-tensor"
    summary = "a NumPy function of a tensor is an ndarray under torch.compile: tensor methods on it fail to compile"
    dynamo_gb = gb_types("GB4315")
    valid = (
        # only arrays' methods, arithmetic with a tensor, torch functions, returned: traced (measured)
        _HEADER + "    a = np.sqrt(x)\n    return a.reshape(-1), np.log(x) + x, torch.relu(np.exp(x)), np.abs(x).sum()\n",
        # not a tensor
        _HEADER + "    return x * np.sqrt(x.shape[-1]).clone()\n",
        # not compiled
        "import numpy as np\nimport torch\n\n\ndef f(x: torch.Tensor):\n    return np.sqrt(x).clone()\n",
    )
    invalid = (
        Example(_HEADER + "    return np.sqrt(x).clone()\n", fixed=_HEADER + "    return torch.sqrt(x).clone()\n", unsafe=True),
        Example(
            _HEADER + "    y = np.abs(x.float())\n    return y[0].unsqueeze(0)\n",
            fixed=_HEADER + "    y = torch.abs(x.float())\n    return y[0].unsqueeze(0)\n",
        ),
        # Latent Diffusion's DDIM schedule: the lambda's parameter takes the ndarray
        Example(
            _HEADER + "    to_torch = lambda t: t.clone().detach().to(torch.float32)\n"
            "    return to_torch(np.log(1. - x.cpu()))\n",
            fixed=_HEADER + "    to_torch = lambda t: t.clone().detach().to(torch.float32)\n"
            "    return to_torch(torch.log(1. - x.cpu()))\n",
            unsafe=True,
        ),
        Example(_HEADER + "    return np.maximum(x, 0).float()\n"),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for call, traced, found in ctx.recognised(numpy_on_tensor, nodes.Call):
            message = (
                f"`{snippet(call.func)}` of a tensor is an ndarray under torch.compile, and "
                f"`{snippet(found.use.func)}()` is no ndarray method: compilation fails"
            )
            yield ctx.report(call, message, traced, torch_twin_fix(ctx.analysis, found))
