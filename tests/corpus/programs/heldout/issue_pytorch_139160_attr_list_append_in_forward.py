"""Module attribute list mutated in forward: `self.attr_list.append(...)`, then indexed.

Source: pytorch/pytorch#139160 (https://github.com/pytorch/pytorch/issues/139160)
Kept: the reporter's ModelAttrMutation (a list of two tensors built in
`__init__`, an unused `recreate_list` helper, `forward` appending a new tensor to
the list and returning `x.sum() + self.attr_list[1].sum()`) and
`model = torch.compile(model)`.
Simplified: `.to('cuda:0')` dropped (CPU).
"""
import torch


class ModelAttrMutation(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attr_list = [torch.randn(3, 2), torch.randn(3, 2)]

    def recreate_list(self):
        return [torch.zeros(3, 2), torch.zeros(3, 2)]

    def forward(self, x):
        self.attr_list.append(torch.ones(3, 2))
        return x.sum() + self.attr_list[1].sum()


def main():
    model = ModelAttrMutation()
    model = torch.compile(model)
    model(torch.randn(10))


def make():
    torch.manual_seed(0)
    return ModelAttrMutation(), [(torch.randn(10),)]
