"""CHGNet crystal readout: GraphAttentionReadOut loops `for n_atom in bin_count` over `torch.bincount(atom_owner)`, slicing each crystal's atoms by tensor bounds, per-crystal softmax attention and `crystal_fea /= n_atom`; CHGNet's non-mlp_first path then scales the crystal energy by `atoms_per_graph`.

Source: CederGroupHub/chgnet@48a6bada7f42603cf0133b24470c7924587effaa:chgnet/model/layers.py:392-453
Also: chgnet/model/functions.py:43-108,200-226 (MLP, find_activation), chgnet/model/model.py:389-520
(_compute: `atoms_per_graph = torch.bincount(g.atom_owners)`, `crystal_feas = self.pooling(...)`,
`energy = self.mlp(crystal_feas).view(-1) * atoms_per_graph`, intensive normalisation).
Kept: MLP, find_activation, GraphAttentionReadOut verbatim; the readout tail of CHGNet._compute.
Simplified: the readout tail is a small module `ReadoutHead` holding `pooling` and `mlp` as CHGNet
does (`read_out="attn"`, average=True); atom_fea_dim 8, 3 heads; atom owners are int64.
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence

import torch
from torch import Tensor, nn


# ---- chgnet/model/functions.py ----
class MLP(nn.Module):
    """Multi-Layer Perceptron used for non-linear regression."""

    def __init__(
        self,
        input_dim: int,
        *,
        output_dim: int = 1,
        hidden_dim: int | Sequence[int] | None = (64, 64),
        dropout: float = 0,
        activation: str = "silu",
        bias: bool = True,
    ) -> None:
        """Initialize the MLP.

        Args:
            input_dim (int): the input dimension
            output_dim (int): the output dimension
            hidden_dim (list[int] | int]): a list of integers or a single integer
                representing the number of hidden units in each layer of the MLP.
                Default = [64, 64]
            dropout (float): the dropout rate before each linear layer. Default: 0
            activation (str, optional): The name of the activation function to use
                in the gated MLP. Must be one of "relu", "silu", "tanh", or "gelu".
                Default = "silu"
            bias (bool): whether to use bias in each Linear layers.
                Default = True
        """
        super().__init__()
        if hidden_dim is None or hidden_dim == 0:
            layers = [nn.Dropout(dropout), nn.Linear(input_dim, output_dim, bias=bias)]
        elif isinstance(hidden_dim, int):
            layers = [
                nn.Linear(input_dim, hidden_dim, bias=bias),
                find_activation(activation),
                nn.Dropout(dropout),
                nn.Linear(hidden_dim, output_dim, bias=bias),
            ]
        elif isinstance(hidden_dim, Sequence):
            layers = [
                nn.Linear(input_dim, hidden_dim[0], bias=bias),
                find_activation(activation),
            ]
            if len(hidden_dim) != 1:
                for h_in, h_out in itertools.pairwise(hidden_dim):
                    layers.append(nn.Linear(h_in, h_out, bias=bias))
                    layers.append(find_activation(activation))
            layers.append(nn.Dropout(dropout))
            layers.append(nn.Linear(hidden_dim[-1], output_dim, bias=bias))
        else:
            raise TypeError(
                f"{hidden_dim=} must be an integer, a list of integers, or None."
            )
        self.layers = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        """Performs a forward pass through the MLP.

        Args:
            x (Tensor): a tensor of shape (batch_size, input_dim)

        Returns:
            Tensor: a tensor of shape (batch_size, output_dim)
        """
        return self.layers(x)



class ScaledSiLU(torch.nn.Module):
    """Scaled Sigmoid Linear Unit."""

    def __init__(self) -> None:
        """Initialize a scaled SiLU."""
        super().__init__()
        self.scale_factor = 1 / 0.6
        self._activation = torch.nn.SiLU()

    def forward(self, x: Tensor) -> Tensor:
        """Forward pass."""
        return self._activation(x) * self.scale_factor


def find_activation(name: str) -> nn.Module:
    """Return an activation function using name."""
    try:
        return {
            "relu": nn.ReLU,
            "silu": nn.SiLU,
            "scaledsilu": ScaledSiLU,
            "gelu": nn.GELU,
            "softplus": nn.Softplus,
            "sigmoid": nn.Sigmoid,
            "tanh": nn.Tanh,
        }[name.lower()]()
    except KeyError as exc:
        raise NotImplementedError from exc


def find_normalization(name: str, dim: int | None = None) -> nn.Module | None:
    """Return an normalization function using name."""
    if name is None:
        return None
    return {
        "batch": nn.BatchNorm1d(dim),
        "layer": nn.LayerNorm(dim),
    }.get(name.lower(), None)


# ---- chgnet/model/layers.py ----
class GraphAttentionReadOut(nn.Module):
    """Multi Head Attention Read Out Layer
    merge the information from atom_feas to crystal_fea.
    """

    def __init__(
        self,
        atom_fea_dim: int,
        num_head: int = 3,
        hidden_dim: int = 32,
        *,
        average=False,
    ) -> None:
        """Initialize the layer.

        Args:
            atom_fea_dim (int): atom feature dimension
            num_head (int): number of attention heads used
            hidden_dim (int): dimension of hidden layer
            average (bool): whether to average the features
        """
        super().__init__()
        self.key = MLP(
            input_dim=atom_fea_dim, output_dim=num_head, hidden_dim=hidden_dim
        )
        self.softmax = nn.Softmax(dim=0)
        self.average = average

    def forward(self, atom_feas: Tensor, atom_owner: Tensor) -> Tensor:
        """Merge the atom features that belong to same graph in a batched graph.

        Args:
            atom_feas (Tensor): batched atom features after convolution layers.
                [num_batch_atoms, atom_fea_dim]
            atom_owner (Tensor): graph indices for each atom.
                [num_batch_atoms]

        Returns:
            crystal_feas (Tensor): crystal feature matrix.
                [n_crystals, atom_fea_dim]
        """
        crystal_feas = []
        weights = self.key(atom_feas)  # [n_batch_atom, n_heads]
        bin_count = torch.bincount(atom_owner)
        start_index = 0
        for n_atom in bin_count:
            # find atoms belong to this crystal. shape = [n_atom, atom_fea_dim]
            atom_fea = atom_feas[start_index : start_index + n_atom, :]

            # find weight belong to these atoms. shape = [n_atom, n_heads]
            weight = self.softmax(weights[start_index : start_index + n_atom, :])

            # Weighted summation from multiple attention heads
            crystal_fea = (atom_fea.T @ weight).view(-1)  # [n_heads * atom_fea_dim]

            # Normalize the crystal feature if the model output is intensive
            if self.average:
                crystal_fea /= n_atom

            crystal_feas.append(crystal_fea)
            start_index += n_atom
        return torch.stack(crystal_feas, dim=0)


# ---- chgnet/model/model.py (CHGNet._compute, readout with mlp_first=False) ----
class ReadoutHead(nn.Module):
    def __init__(self, atom_fea_dim: int = 8, num_head: int = 3, is_intensive: bool = True):
        super().__init__()
        self.mlp_first = False
        self.is_intensive = is_intensive
        self.pooling = GraphAttentionReadOut(atom_fea_dim, num_head=num_head, average=True)
        self.mlp = MLP(input_dim=atom_fea_dim * num_head, hidden_dim=[16, 16], output_dim=1)

    def forward(self, atom_feas: Tensor, atom_owners: Tensor) -> dict:
        prediction = {}
        atoms_per_graph = torch.bincount(atom_owners)
        prediction["atoms_per_graph"] = atoms_per_graph
        crystal_feas = self.pooling(atom_feas, atom_owners)
        energy = self.mlp(crystal_feas).view(-1) * atoms_per_graph
        prediction["crystal_fea"] = crystal_feas
        # Normalize energy if model is intensive
        if self.is_intensive:
            energy /= atoms_per_graph
        prediction["e"] = energy
        return prediction


head = torch.compile(ReadoutHead())


def make():
    torch.manual_seed(0)
    atom_feas = torch.randn(7, 8)
    owners_a = torch.tensor([0, 0, 0, 1, 1, 2, 2])
    owners_b = torch.tensor([0, 0, 0, 0, 0, 1, 1])
    return ReadoutHead(), [(atom_feas, owners_a), (atom_feas, owners_b)]
