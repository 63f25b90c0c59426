"""GM303 bad: ChatGLM picks its mask token by asking whether the ids contain one.

`MASK in input_ids` runs `Tensor.__contains__`, which reads `(input_ids == MASK).any()` back with `.item()`
(GB0124) inside torch's own Python code: Dynamo then runs the rest of the function eagerly.
"""
import torch
from torch import nn

MASK, GMASK = 150000, 150001


class MaskPosition(nn.Module):
    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        mask_token = MASK if MASK in input_ids else GMASK
        return (input_ids == mask_token).float().argmax(-1)


def make():
    """Return (eager_callable, input_sets)."""
    ids = torch.tensor([[5, 150000, 7], [150000, 3, 4]])
    return MaskPosition(), [(ids,), (ids.clamp(max=9),)]


compiled = torch.compile(MaskPosition())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
