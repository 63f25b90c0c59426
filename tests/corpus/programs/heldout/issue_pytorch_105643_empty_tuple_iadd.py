"""`values = (); values += (x,)` under fullgraph=True (reported unsupported in 2.0).

Source: https://github.com/pytorch/pytorch/issues/105643
Kept: the three repro functions (iadd on an empty tuple, on an empty list,
and on a tuple holding a tensor), each decorated `@torch.compile(fullgraph=True)`;
the report notes transformers' Llama used `+=` on an empty tuple
(all_hidden_states).
Simplified: one entry calls the three originals.
"""
import torch


@torch.compile(fullgraph=True)
def foo(x):
    values = ()
    values += (x,)

    return values


@torch.compile(fullgraph=True)
def foo_list(x):
    values = []
    values += [x]

    return values


@torch.compile(fullgraph=True)
def foo2(x, y):
    values = (y,)
    values += (x,)

    return values


_originals = (foo._torchdynamo_orig_callable, foo_list._torchdynamo_orig_callable, foo2._torchdynamo_orig_callable)


def run_all(x, y):
    orig_foo, orig_foo_list, orig_foo2 = _originals
    return orig_foo(x), orig_foo_list(x), orig_foo2(x, y)


def make():
    return run_all, [(torch.tensor(2), torch.tensor(3))]
