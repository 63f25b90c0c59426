"""Heterogeneous GNN layer looking up its per-edge-type conv in PyG's ModuleDict subclass, whose
__getitem__ maps a tuple key ("paper", "cites", "paper") to an internal string key.

Source: pytorch/pytorch#111551 (https://github.com/pytorch/pytorch/issues/111551) -- "Custom
`ModuleDict.__getitem__(key: tuple)` produces a graph break", reported from PyG / PyTorch Frame;
ModuleDict from pyg-team/pytorch_geometric@0459489417aae15c9ac4e42f2eafca410e592143:torch_geometric/nn/module_dict.py.
Kept: PyG's ModuleDict verbatim (`_cls_attrs = dir(torch.nn.ModuleDict)`, to_internal_key with
the tuple join / class-attr / dot replacement, __getitem__ calling super().__getitem__), a
HeteroConv-style forward looping over edge types, unpacking `src, rel, dst`, looking the conv up
with the tuple key, grouping outputs per destination node type and summing them.
Simplified: each conv is a small SAGE-like mean aggregation written with index_add_; two node
types, three edge types, 4 features.
"""
from typing import Iterable, Mapping, Optional, Tuple, Union

import torch
from torch.nn import Module

Key = Union[str, Tuple[str, ...]]


# `torch.nn.ModuleDict` doesn't allow `.` to be used in key names.
# This `ModuleDict` will support it by converting the `.` to `#` in the
# internal representation and converts it back to `.` in the external
# representation. It also allows passing tuples as keys.
class ModuleDict(torch.nn.ModuleDict):
    _cls_attrs = dir(torch.nn.ModuleDict)

    def __init__(
        self,
        modules: Optional[Mapping[Union[str, Tuple[str, ...]], Module]] = None,
    ):
        if modules is not None:  # Replace the keys in modules:
            modules = {
                self.to_internal_key(key): module
                for key, module in modules.items()
            }
        super().__init__(modules)

    @classmethod
    def to_internal_key(cls, key: Key) -> str:
        if isinstance(key, tuple):
            # ModuleDict cannot handle tuples as keys:
            assert len(key) > 1
            key = f"<{'___'.join(key)}>"

        assert isinstance(key, str)

        # ModuleDict cannot handle keys that exists as class attributes:
        if key in cls._cls_attrs:
            key = f'<{key}>'

        # ModuleDict cannot handle dots in keys:
        return key.replace('.', '#')

    @classmethod
    def to_external_key(cls, key: str) -> Key:
        key = key.replace('#', '.')

        if key[0] == '<' and key[-1] == '>' and key[1:-1] in cls._cls_attrs:
            key = key[1:-1]

        if key[0] == '<' and key[-1] == '>' and '___' in key:
            key = tuple(key[1:-1].split('___'))

        return key

    def __getitem__(self, key: Key) -> Module:
        return super().__getitem__(self.to_internal_key(key))

    def __contains__(self, key: Key) -> bool:
        return super().__contains__(self.to_internal_key(key))


class SAGEConv(torch.nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin_l = torch.nn.Linear(in_channels, out_channels)
        self.lin_r = torch.nn.Linear(in_channels, out_channels, bias=False)

    def forward(self, x, edge_index):
        x_src, x_dst = x
        row, col = edge_index[0], edge_index[1]
        msg = x_src.index_select(0, row)
        out = torch.zeros(x_dst.size(0), x_src.size(1), dtype=x_src.dtype)
        out = out.index_add_(0, col, msg)
        count = torch.zeros(x_dst.size(0), dtype=x_src.dtype).index_add_(
            0, col, torch.ones_like(col, dtype=x_src.dtype))
        out = out / count.clamp(min=1).unsqueeze(-1)
        return self.lin_l(out) + self.lin_r(x_dst)


class HeteroConv(torch.nn.Module):
    def __init__(self, convs, aggr="sum"):
        super().__init__()
        self.edge_types = list(convs.keys())
        self.convs = ModuleDict(convs)
        self.aggr = aggr

    def forward(self, x_dict, edge_index_dict):
        out_dict = {}
        for edge_type in self.edge_types:
            src, rel, dst = edge_type
            conv = self.convs[edge_type]
            out = conv((x_dict[src], x_dict[dst]), edge_index_dict[edge_type])
            if dst not in out_dict:
                out_dict[dst] = [out]
            else:
                out_dict[dst].append(out)

        for key, value in out_dict.items():
            out_dict[key] = torch.stack(value, dim=0).sum(dim=0)
        return out_dict


EDGE_TYPES = [
    ("paper", "cites", "paper"),
    ("author", "writes", "paper"),
    ("paper", "rev_writes", "author"),
]


def build_model():
    return HeteroConv({et: SAGEConv(4, 4) for et in EDGE_TYPES})


model = torch.compile(build_model())


def make():
    torch.manual_seed(0)
    x_dict = {"paper": torch.randn(5, 4), "author": torch.randn(3, 4)}
    edge_index_dict = {
        ("paper", "cites", "paper"): torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]]),
        ("author", "writes", "paper"): torch.tensor([[0, 1, 2], [0, 2, 4]]),
        ("paper", "rev_writes", "author"): torch.tensor([[0, 2, 4], [0, 1, 2]]),
    }
    return build_model(), [(x_dict, edge_index_dict)]
