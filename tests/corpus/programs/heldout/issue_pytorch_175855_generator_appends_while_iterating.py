"""A forward that defines a generator which appends to the list it iterates, then stacks what it yields.

Source: pytorch/pytorch#175855 (https://github.com/pytorch/pytorch/issues/175855)
Kept: the reporter's module verbatim (`vals = [x.sum()]`, nested generator `grow_and_read` that
appends `item + 1` while `len(vals) < 3`, `list(...)`, `torch.stack(seq).sum()`) and `torch.compile(m)(x)`.
Simplified: nothing.
"""
import torch
import torch.nn as nn


class module(nn.Module):
    def forward(self, x):
        vals = [x.sum()]

        def grow_and_read():
            for item in vals:
                if len(vals) < 3:
                    vals.append(item + 1)
                yield item
        seq = list(grow_and_read())
        return torch.stack(seq).sum()


def main():
    m = module()
    x = torch.ones(1)
    output1 = m(x)
    output2 = torch.compile(m)(x)
    return output1, output2


def make():
    torch.manual_seed(0)
    return module(), [(torch.ones(1),)]
