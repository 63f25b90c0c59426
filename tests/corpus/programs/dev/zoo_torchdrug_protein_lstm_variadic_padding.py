"""TorchDrug's ProteinLSTM: `variadic_to_padded` pads residues with `max_size = size.max()` (a tensor used in shapes), builds the mask with multi_slice_mask (an `assert slices.min() >= 0 and slices.max() <= length` guard), writes `padded[mask] = input`, runs a bidirectional `nn.LSTM`, and reads back `padded[mask]`.

Source: DeepGraphLearning/torchdrug@786d23879f7003cdb8b21142e0cf8f0cac0ac00c:torchdrug/models/lstm.py:12-88
Also: torchdrug/layers/functional/functional.py@786d23879f7003cdb8b21142e0cf8f0cac0ac00c (multi_slice_mask,
variadic_to_padded, padded_to_variadic); rusty1s/pytorch_scatter torch_scatter/scatter.py (scatter_add, inlined).
Kept: ProteinLSTM (constructor options, forward with the graph.residue_feature
/ graph.num_residues plumbing and hidden-state reweighting) and the three
functional helpers verbatim.
Simplified: the Protein graph is a small attribute holder; core.Configurable
and the registry decorator are dropped; torch_scatter's scatter_add is inlined
as its Python definition.
"""
import torch
from torch import nn
from torch.nn import functional as F


def scatter_add(src, index, dim=-1, out=None, dim_size=None):
    size = list(src.size())
    if dim_size is not None:
        size[dim] = dim_size
    elif index.numel() == 0:
        size[dim] = 0
    else:
        size[dim] = int(index.max()) + 1
    out = torch.zeros(size, dtype=src.dtype, device=src.device)
    return out.scatter_add_(dim, index, src)


def multi_slice_mask(starts, ends, length):
    values = torch.cat([torch.ones_like(starts), -torch.ones_like(ends)])
    slices = torch.cat([starts, ends])
    if slices.numel():
        assert slices.min() >= 0 and slices.max() <= length
    mask = scatter_add(values, slices, dim=0, dim_size=length + 1)[:-1]
    mask = mask.cumsum(0).bool()
    return mask


def variadic_to_padded(input, size, value=0):
    num_sample = len(size)
    max_size = size.max()
    starts = torch.arange(num_sample, device=size.device) * max_size
    ends = starts + size
    mask = multi_slice_mask(starts, ends, num_sample * max_size)
    mask = mask.view(num_sample, max_size)
    shape = (num_sample, max_size) + input.shape[1:]
    padded = torch.full(shape, value, dtype=input.dtype, device=size.device)
    padded[mask] = input
    return padded, mask


def padded_to_variadic(padded, size):
    num_sample, max_size = padded.shape[:2]
    starts = torch.arange(num_sample, device=size.device) * max_size
    ends = starts + size
    mask = multi_slice_mask(starts, ends, num_sample * max_size)
    mask = mask.view(num_sample, max_size)
    return padded[mask]


class Protein:
    def __init__(self, residue_feature, num_residues):
        self.residue_feature = residue_feature
        self.num_residues = num_residues


class ProteinLSTM(nn.Module):
    def __init__(self, input_dim, hidden_dim, num_layers, activation='tanh', layer_norm=False,
                 dropout=0):
        super(ProteinLSTM, self).__init__()
        self.input_dim = input_dim
        self.output_dim = hidden_dim    # output_dim for node feature is 2 * hidden_dim
        self.node_output_dim = 2 * hidden_dim
        self.num_layers = num_layers
        self.padding_id = input_dim - 1

        self.embedding = nn.Linear(input_dim, hidden_dim)
        if layer_norm:
            self.layer_norm = nn.LayerNorm(hidden_dim)
        else:
            self.layer_norm = None
        if dropout:
            self.dropout = nn.Dropout(dropout)
        else:
            self.dropout = None
        if isinstance(activation, str):
            self.activation = getattr(F, activation)
        else:
            self.activation = activation

        self.lstm = nn.LSTM(hidden_dim, hidden_dim, num_layers, batch_first=True, dropout=dropout,
                            bidirectional=True)

        self.reweight = nn.Linear(2 * num_layers, 1)
        self.linear = nn.Linear(hidden_dim, hidden_dim)

    def forward(self, graph, input, all_loss=None, metric=None):
        input = graph.residue_feature.float()
        input = variadic_to_padded(input, graph.num_residues, value=self.padding_id)[0]

        input = self.embedding(input)
        if self.layer_norm:
            input = self.layer_norm(input)
        if self.dropout:
            input = self.dropout(input)

        output, hidden = self.lstm(input)

        residue_feature = padded_to_variadic(output, graph.num_residues)

        # (2 * num_layer, B, d)
        graph_feature = self.reweight(hidden[0].permute(1, 2, 0)).squeeze(-1)
        graph_feature = self.linear(graph_feature)
        graph_feature = self.activation(graph_feature)

        return {
            "graph_feature": graph_feature,
            "residue_feature": residue_feature
        }


def build_model():
    return ProteinLSTM(input_dim=6, hidden_dim=4, num_layers=2, layer_norm=True, dropout=0.1).eval()


def make():
    torch.manual_seed(0)
    num_residues = torch.tensor([3, 5])
    residue_feature = F.one_hot(torch.randint(0, 5, (8,)), 6)
    graph = Protein(residue_feature, num_residues)
    return build_model(), [(graph, residue_feature.float())]


model = torch.compile(build_model())
