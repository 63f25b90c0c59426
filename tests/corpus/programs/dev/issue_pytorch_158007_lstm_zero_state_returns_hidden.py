"""LSTM fed explicit zero (h0, c0) built from the input's batch size, returning the final state tuple.

Source: pytorch/pytorch#158007 (https://github.com/pytorch/pytorch/issues/158007)
Kept: the reporter's MyModel (`nn.LSTM(input_size=rnn_dims, hidden_size=rnn_dims,
batch_first=True)`, `h0`/`c0` from `torch.zeros(1, x.size(0), self.rnn.hidden_size,
device=x.device, dtype=x.dtype)`, `out, h1 = self.rnn(x, (h0, c0))`, returning
`h1`), the eval model, and `torch.compile(model, fullgraph=True,
backend="inductor")` called under `torch.no_grad()`.
Simplified: CUDA -> CPU, rnn_dims 512 -> 8; the eager/compiled try/except
printing is kept in main().
"""
import torch
import torch.nn as nn


class MyModel(nn.Module):
    def __init__(self, rnn_dims=512):
        super().__init__()
        self.rnn = nn.LSTM(input_size=rnn_dims, hidden_size=rnn_dims, batch_first=True)

    def forward(self, x):
        h0 = torch.zeros(1, x.size(0), self.rnn.hidden_size, device=x.device, dtype=x.dtype)
        c0 = torch.zeros(1, x.size(0), self.rnn.hidden_size, device=x.device, dtype=x.dtype)
        out, h1 = self.rnn(x, (h0, c0))
        return h1  # tuple (h_n, c_n)


def main():
    torch.manual_seed(0)
    model = MyModel(rnn_dims=8).eval()
    input_tensor = torch.rand(1, 1, 8, dtype=torch.float32)

    try:
        with torch.no_grad():
            eager_output = model(input_tensor)
        print("Eager output:", eager_output[0].shape, eager_output[1].shape)
    except Exception as e:
        print(e)

    try:
        compiled_model = torch.compile(model, fullgraph=True, backend="inductor")
        with torch.no_grad():
            compiled_output = compiled_model(input_tensor)
        print("Compiled output:", compiled_output[0].shape, compiled_output[1].shape)
    except Exception as e:
        print(e)


def make():
    torch.manual_seed(0)
    model = MyModel(rnn_dims=8).eval()
    return model, [(torch.rand(1, 1, 8),), (torch.rand(2, 3, 8),)]
