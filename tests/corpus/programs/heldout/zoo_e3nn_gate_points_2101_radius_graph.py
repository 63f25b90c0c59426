"""e3nn gate_points_2101 Network: a naive radius_graph with `((r < r_max) & (r > 0)).nonzero().T` and a boolean column filter, smooth_cutoff's masked assignments, scatter_add message passing, and `int(batch.max()) + 1` for the pooled output size.

Source: e3nn/e3nn@2aa7f58440a06b15352a2cbce01fa4c26f824969:e3nn/nn/models/gate_points_2101.py:19-32,116-140,308-355
Also: e3nn/math/_soft_one_hot_linspace.py:7-115 (soft_one_hot_linspace, gaussian basis),
e3nn/nn/_fc.py (FullyConnectedNet: normalized linear layers with an activation).
Kept: scatter, radius_graph, smooth_cutoff and Network.forward verbatim (the
"batch"/"x"/"z" dict switches, edge vectors, gaussian length embedding,
reduce_output pooling); Convolution.forward's structure (self-connection, lin1,
per-edge tensor product with weights from the radial net, scatter over edge_dst,
lin2, the sin/cos mixing with the output mask).
Simplified: every irreps is scalar ("Nx0e"), so spherical harmonics of order 0 are
ones, FullyConnectedTensorProduct with a scalar attribute is a bias-free Linear,
the "uvu" TensorProduct is an elementwise product with the radial weights, and
Gate on scalars is silu; o3.Irreps bookkeeping is dropped; 4 hidden channels,
2 layers, 6 atoms.
"""
import math
from typing import Dict

import torch


def scatter(src: torch.Tensor, index: torch.Tensor, dim_size: int) -> torch.Tensor:
    # special case of torch_scatter.scatter with dim=0
    out = src.new_zeros(dim_size, src.shape[1])
    index = index.reshape(-1, 1).expand_as(src)
    return out.scatter_add_(0, index, src)


def radius_graph(pos, r_max, batch) -> torch.Tensor:
    # naive and inefficient version of torch_cluster.radius_graph
    r = torch.cdist(pos, pos)
    index = ((r < r_max) & (r > 0)).nonzero().T
    index = index[:, batch[index[0]] == batch[index[1]]]
    return index


def soft_one_hot_linspace(x: torch.Tensor, start, end, number, basis=None, cutoff=None) -> torch.Tensor:
    if cutoff not in [True, False]:
        raise ValueError("cutoff must be specified")

    if not cutoff:
        values = torch.linspace(start, end, number, dtype=x.dtype, device=x.device)
        step = values[1] - values[0]
    else:
        values = torch.linspace(start, end, number + 2, dtype=x.dtype, device=x.device)
        step = values[1] - values[0]
        values = values[1:-1]

    diff = (x[..., None] - values) / step

    if basis == "gaussian":
        return diff.pow(2).neg().exp().div(1.12)

    if basis == "cosine":
        return torch.cos(math.pi / 2 * diff) * (diff < 1) * (-1 < diff)

    raise ValueError(f'basis="{basis}" is not a valid entry')


def smooth_cutoff(x):
    u = 2 * (x - 1)
    y = (math.pi * u).cos().neg().add(1).div(2)
    y[u > 0] = 0
    y[u < -1] = 1
    return y


class FullyConnectedNet(torch.nn.Sequential):
    def __init__(self, hs, act=None) -> None:
        super().__init__()
        self.hs = list(hs)
        for i, (h1, h2) in enumerate(zip(self.hs, self.hs[1:])):
            self.add_module(f"layer{i}", torch.nn.Linear(h1, h2, bias=False))
            if i < len(self.hs) - 2 and act is not None:
                self.add_module(f"act{i}", torch.nn.SiLU())


class ScalarTensorProduct(torch.nn.Module):
    """FullyConnectedTensorProduct(Nx0e, 1x0e, Mx0e): a bias-free linear map of x times the scalar attribute."""

    def __init__(self, mul_in: int, mul_out: int) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(mul_in, mul_out, bias=False)
        self.register_buffer("output_mask", torch.ones(mul_out))

    def forward(self, x, attr):
        return self.linear(x) * attr


class Convolution(torch.nn.Module):
    def __init__(self, mul_in, mul_out, number_of_basis, radial_layers, radial_neurons, num_neighbors) -> None:
        super().__init__()
        self.num_neighbors = num_neighbors
        self.sc = ScalarTensorProduct(mul_in, mul_out)
        self.lin1 = ScalarTensorProduct(mul_in, mul_in)
        self.fc = FullyConnectedNet(
            [number_of_basis] + radial_layers * [radial_neurons] + [mul_in], torch.nn.functional.silu
        )
        self.lin2 = ScalarTensorProduct(mul_in, mul_out)

    def tp(self, x, edge_attr, weight):
        return x * edge_attr * weight

    def forward(self, node_input, node_attr, edge_src, edge_dst, edge_attr, edge_length_embedded) -> torch.Tensor:
        weight = self.fc(edge_length_embedded)

        x = node_input

        s = self.sc(x, node_attr)
        x = self.lin1(x, node_attr)

        edge_features = self.tp(x[edge_src], edge_attr, weight)
        x = scatter(edge_features, edge_dst, dim_size=x.shape[0]).div(self.num_neighbors**0.5)

        x = self.lin2(x, node_attr)

        c_s, c_x = math.sin(math.pi / 8), math.cos(math.pi / 8)
        m = self.sc.output_mask
        c_x = (1 - m) + c_x * m
        return c_s * s + c_x * x


class Compose(torch.nn.Module):
    def __init__(self, first, second) -> None:
        super().__init__()
        self.first = first
        self.second = second

    def forward(self, *input):
        x = self.first(*input)
        return self.second(x)


class Network(torch.nn.Module):
    def __init__(
        self,
        mul_in,
        mul_hidden,
        mul_out,
        layers,
        max_radius,
        number_of_basis=10,
        radial_layers=1,
        radial_neurons=100,
        num_neighbors=1.0,
        num_nodes=1.0,
        reduce_output=True,
    ) -> None:
        super().__init__()
        self.max_radius = max_radius
        self.number_of_basis = number_of_basis
        self.num_neighbors = num_neighbors
        self.num_nodes = num_nodes
        self.reduce_output = reduce_output

        self.irreps_in = mul_in
        self.input_has_node_in = mul_in is not None
        self.input_has_node_attr = False

        self.layers = torch.nn.ModuleList()
        mul = mul_in if mul_in is not None else 1
        for _ in range(layers):
            conv = Convolution(mul, mul_hidden, number_of_basis, radial_layers, radial_neurons, num_neighbors)
            mul = mul_hidden
            self.layers.append(Compose(conv, torch.nn.SiLU()))
        self.layers.append(Convolution(mul, mul_out, number_of_basis, radial_layers, radial_neurons, num_neighbors))

    def forward(self, data: Dict[str, torch.Tensor]) -> torch.Tensor:
        if "batch" in data:
            batch = data["batch"]
        else:
            batch = data["pos"].new_zeros(data["pos"].shape[0], dtype=torch.long)

        edge_index = radius_graph(data["pos"], self.max_radius, batch)
        edge_src = edge_index[0]
        edge_dst = edge_index[1]
        edge_vec = data["pos"][edge_src] - data["pos"][edge_dst]
        # spherical harmonics of order 0 with component normalization
        edge_sh = edge_vec.new_ones(edge_vec.shape[0], 1)
        edge_length = edge_vec.norm(dim=1)
        edge_length_embedded = soft_one_hot_linspace(
            x=edge_length, start=0.0, end=self.max_radius, number=self.number_of_basis, basis="gaussian", cutoff=False
        ).mul(self.number_of_basis**0.5)
        edge_attr = smooth_cutoff(edge_length / self.max_radius)[:, None] * edge_sh

        if self.input_has_node_in and "x" in data:
            assert self.irreps_in is not None
            x = data["x"]
        else:
            assert self.irreps_in is None
            x = data["pos"].new_ones((data["pos"].shape[0], 1))

        z = data["pos"].new_ones((data["pos"].shape[0], 1))

        for lay in self.layers:
            x = lay(x, z, edge_src, edge_dst, edge_attr, edge_length_embedded)

        if self.reduce_output:
            return scatter(x, batch, dim_size=int(batch.max()) + 1).div(self.num_nodes**0.5)
        else:
            return x


def build_network():
    return Network(
        mul_in=None,
        mul_hidden=4,
        mul_out=1,
        layers=2,
        max_radius=2.0,
        number_of_basis=5,
        radial_layers=1,
        radial_neurons=8,
        num_neighbors=2.0,
        num_nodes=3.0,
    )


net = torch.compile(build_network())


def make():
    torch.manual_seed(0)
    pos = torch.randn(6, 3)
    batch = torch.tensor([0, 0, 0, 1, 1, 1])
    return build_network(), [({"pos": pos, "batch": batch},), ({"pos": pos},)]
