"""GM202 bad: a hook registry replaces a block's `forward`, and the replacement logs (diffusers' cache hooks).

`module.forward = functools.partial(hook.new_forward, module)` makes calling the block run `new_forward`:
Dynamo traces it there, and its `logger.debug` breaks the graph even though debug records are off.
"""
import functools
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class SkipHook:
    def __init__(self) -> None:
        self.original_forward = None
        self.calls = 0

    def new_forward(self, module: nn.Module, hidden_states: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if not torch.compiler.is_compiling():
            logger.debug("cache hook: computing block")
        return self.original_forward(hidden_states)


def register_hook(module: nn.Module, hook: SkipHook) -> None:
    hook.original_forward = module.forward
    module.forward = functools.partial(hook.new_forward, module)


class Block(nn.Module):
    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return hidden_states + self.proj(hidden_states).relu()


class Transformer(nn.Module):
    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim), Block(dim)])

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            hidden_states = block(hidden_states)
        return hidden_states


def build() -> Transformer:
    model = Transformer()
    for block in model.blocks:
        register_hook(block, SkipHook())
    return model


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return build(), [(torch.randn(2, 3, 8),)]


compiled = torch.compile(build())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
