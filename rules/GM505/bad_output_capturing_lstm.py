"""GM505 bad: the output-capturing wrapper around a forward that calls an `nn.LSTM` (no source fix for that).

Source: huggingface/transformers@v5.23.0:src/transformers/utils/output_capturing.py:326-365 (capture_outputs)
GM505's fix alone removes the comprehension's break; the LSTM's stays (tests/test_break_causes_dynamo.py).
"""
from functools import wraps

import torch
from torch import nn

CAN_RECORD = {"hidden_states": 0, "attentions": 1}


def capture_outputs(func):
    @wraps(func)
    def wrapper(self, *args, **kwargs):
        recordable_keys = {
            f"output_{k}": kwargs.pop(f"output_{k}", getattr(self.config, f"output_{k}", False))
            for k in CAN_RECORD
        }
        try:
            outputs = func(self, *args, **kwargs)
        finally:
            recordable_keys.clear()
        return outputs

    return wrapper


class Config:
    output_hidden_states = False
    output_attentions = False


class Encoder(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.config = Config()
        self.lstm = nn.LSTM(dim, dim, batch_first=True)

    @capture_outputs
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return out


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Encoder(), [(torch.randn(2, 3, 4),)]


compiled = torch.compile(Encoder())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
