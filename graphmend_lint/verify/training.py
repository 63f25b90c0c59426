"""Train mode for a verification arm (``--train``): a training step's forward, backward and gradients.

Many graph breaks exist only while training: layerdrop's
``if self.training and torch.rand([]) < self.layerdrop``, dropout-gated
branches, gradient-path conditionals. So in train mode the callable (when it
is an ``nn.Module``) is put in ``.train()``, runs with autograd enabled, and
after each eager call the arm backpropagates :func:`loss_of` its output and
keeps every parameter's ``.grad``: a fix must leave the gradients equal as
well as the outputs. Dropout stays active; the arm seeds the RNG before each
call, so both arms draw the same masks unless a fix changes the draws.

Only the forward pass is compiled (as in a training loop whose loss and
``backward`` run outside the compiled model): Dynamo's breaks are in the
forward, and backward is traced by AOT autograd, which does not graph-break.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils import _pytree as pytree


def set_train_mode(callable_: Any) -> None:
    """``.train()`` on a module; plain functions have no mode."""
    if isinstance(callable_, torch.nn.Module):
        callable_.train()


def loss_of(output: Any) -> torch.Tensor | None:
    """A scalar that depends on every differentiable output: the sum of their mean squares.

    The sum of the outputs themselves would do for a plain linear map, but a
    LayerNorm'd output sums to a constant, so its gradient would be zero
    everywhere and a gradient change would go unseen. ``None`` when no output
    requires grad (nothing to backpropagate).
    """
    terms = [
        leaf.float().pow(2).mean()
        for leaf in pytree.tree_leaves(output)
        if isinstance(leaf, torch.Tensor) and leaf.requires_grad and leaf.is_floating_point()
    ]
    return torch.stack(terms).sum() if terms else None


def backward_gradients(callable_: Any, output: Any) -> dict[str, Any]:
    """Backpropagate :func:`loss_of` ``output`` and return ``{"grad.<parameter>": .grad}``, then clear them.

    A parameter the loss does not reach keeps ``None``, which must match too.
    Gradients are cleared (set to ``None``) so that the next input set starts
    from zero, as after ``optimizer.zero_grad()``.
    """
    if not isinstance(callable_, torch.nn.Module):
        return {}
    loss = loss_of(output)
    if loss is None:
        return {"grad": "<no differentiable output>"}
    loss.backward()
    gradients = {
        f"grad.{name}": None if parameter.grad is None else parameter.grad.detach().cpu().clone()
        for name, parameter in callable_.named_parameters()
    }
    callable_.zero_grad(set_to_none=True)
    return gradients
