"""A compiled generator that trains a tiny model and yields each step's gradients.

Source: https://github.com/pytorch/pytorch/issues/126360
The reporter's `fn`: a Sequential(Linear, Sigmoid) built inside the compiled
function, three steps of forward/sum/backward, each step yielding the weight
and bias grads before `model.zero_grad()`; the caller drains it with `list()`.
Kept: the generator body as posted, `opt_fn = torch.compile(fn)`.
Simplified: Linear(400, 4) on 100 rows -> Linear(8, 4) on 5 rows.
"""
import torch


def fn():
    model = torch.nn.Sequential(
        torch.nn.Linear(8, 4),
        torch.nn.Sigmoid(),
    )

    for _ in range(3):
        x = torch.randn([5, 8])

        result = model(x).sum()
        result.backward()
        yield model[0].weight.grad
        yield model[0].bias.grad
        model.zero_grad()


opt_fn = torch.compile(fn)


def drain():
    outs = opt_fn()
    return list(outs)


def make():
    torch.manual_seed(0)
    return fn, [()]
