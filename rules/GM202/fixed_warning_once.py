"""GM202 bad: transformers' `logger.warning_once` under a cache check, as in BioGpt/T5/Marian 4.52."""
import torch
from torch import nn
from transformers.utils import logging

logger = logging.get_logger(__name__)


class Decoder(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.embed = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, dim)
        self.gradient_checkpointing = False

    def forward(self, x, past_key_values=None, use_cache=True):
        if self.gradient_checkpointing and self.training and use_cache:
            if not torch.compiler.is_compiling():
                logger.warning_once("`use_cache=True` is incompatible with gradient checkpointing.")
            use_cache = False
        h = self.embed(x)
        return_legacy_cache = False
        if use_cache and not isinstance(past_key_values, dict):
            return_legacy_cache = True
            if not torch.compiler.is_compiling():
                logger.warning_once(
                    "Passing a tuple of `past_key_values` is deprecated. "
                    "You should pass a dict instead."
                )
            past_key_values = {}
        out = self.head(torch.tanh(h))
        if return_legacy_cache:
            past_key_values = tuple(past_key_values.items())
        return out, past_key_values


def make():
    """Return (eager_callable, input_sets): with and without the cache warning."""
    torch.manual_seed(0)
    x = torch.randn(2, 8)
    return Decoder(), [(x, None, True), (x, None, False)]


compiled = torch.compile(Decoder())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args)[0].sum())
