"""Hand-written RNN cell unrolled over time with tensor_split, compiled as a bound method with dynamic=True.

Source: pytorch/pytorch#105524 (https://github.com/pytorch/pytorch/issues/105524)
Kept: the reporter's RNNTest class (plain object, not nn.Module) holding two concatenated
parameter tensors with requires_grad_, RNNScript's `input @ self.param1`, the
`torch.tensor_split(..., 2, 2)` of the input projection, the Python loop over
`zip(Wx_inp, Wx_rec)` with a second tensor_split of the recurrent product, the hard-coded
`torch.zeros(batch, hidden)` state, list append and torch.stack of the outputs, and
`torch.compile(model.RNNScript, dynamic=True)` as the entry.
Simplified: batch 4 / hidden 6 / input 3 instead of 64 / 340 / ...; the weights are
filled with randn instead of left uninitialised (torch.empty); no optimizer/backward loop.
"""
import torch

input_size = 3
hidden_size = 6


class RNNTest():

    def __init__(self, device) -> None:
        w_ih = torch.randn((input_size, hidden_size), device=device) * 0.1
        w_io = torch.randn((input_size, hidden_size), device=device) * 0.1
        self.param1 = torch.cat([w_ih, w_io], 1)
        self.param1.requires_grad_(True)

        w_hh = torch.randn((hidden_size, hidden_size), device=device) * 0.1
        w_ho = torch.randn((hidden_size, hidden_size), device=device) * 0.1
        self.param2 = torch.cat([w_hh, w_ho], 1)
        self.param2.requires_grad_(True)

    def RNNScript(self,
        input,
        ):

        state1 = torch.zeros(4, 6, dtype=input.dtype, device=input.device)

        outs = []

        Wx = input @ self.param1
        Wx_inp, Wx_rec = torch.tensor_split(Wx, 2, 2)
        for wt_inp, wt_rec in zip(Wx_inp, Wx_rec):
            rec_mul_inp, rec_mul_rec = torch.tensor_split(state1 @ self.param2, 2, 1)
            input_prev = (wt_inp + rec_mul_inp)
            output_gate = (wt_rec + rec_mul_rec)

            state1 = 1. + input_prev * torch.sigmoid(output_gate)
            outs.append(state1)

        outs = torch.stack(outs)
        return outs


def main():
    model = RNNTest("cpu")
    rnn_script = torch.compile(model.RNNScript, dynamic=True)
    for seq_len in (5, 7):
        inp = torch.randn(seq_len, 4, input_size)
        out = rnn_script(inp)
        out.sum().backward()


def make():
    torch.manual_seed(0)
    model = RNNTest("cpu")
    return model.RNNScript, [
        (torch.randn(5, 4, input_size),),
        (torch.randn(7, 4, input_size),),
    ]
