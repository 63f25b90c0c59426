"""Chemprop v2 MPNN forward: directed-bond message passing with scatter_reduce_ into per-atom sums, then MeanAggregation sizes its output by `batch.max().int() + 1` before scatter-reducing atoms into molecules, batch norm and an FFN predictor.

Source: chemprop/chemprop@9a0b47ad19ebf440c1557787e666d442728adaad:chemprop/nn/message_passing/base.py:55-253
Also: chemprop/nn/message_passing/mixins.py (_BondMessagePassingMixin),
chemprop/nn/agg.py:19-80 (Aggregation, MeanAggregation), chemprop/models/model.py:66-146
(MPNN.__init__ plumbing, fingerprint, forward), chemprop/data/collate.py:13-71 (BatchMolGraph).
Kept: _MessagePassingBase's __init__ wiring (setup() returning W_i/W_h/W_o/W_d,
tau, V_d_transform / graph_transform identities), update, finalize (the V_d
branch with its try/except into InvalidShapeError), forward (undirected switch,
depth loop, final scatter_reduce_), BondMessagePassing.setup, the bond mixin,
MeanAggregation, MPNN.fingerprint/forward, BatchMolGraph's __post_init__ batching.
Simplified: Lightning's HyperparametersMixin / save_hyperparameters and the
metrics/criterion plumbing are dropped; the predictor is a small FFN; molecules
are hand-made numpy graphs; d_v 4, d_e 3, d_h 8.
"""
from dataclasses import InitVar, dataclass, field
from typing import NamedTuple, Sequence

import numpy as np
import torch
from torch import Tensor, nn


class InvalidShapeError(ValueError):
    def __init__(self, var_name: str, received_shape: Sequence[int], expected_shape: Sequence[int]):
        message = (
            f"arg '{var_name}' has incorrect shape! "
            f"got: `{' x '.join(map(str, received_shape))}`. "
            f"expected: `{' x '.join(map(str, expected_shape))}`"
        )
        super().__init__(message)


class MolGraph(NamedTuple):
    V: np.ndarray
    E: np.ndarray
    edge_index: np.ndarray
    rev_edge_index: np.ndarray


@dataclass(repr=False, eq=False, slots=True)
class BatchMolGraph:
    r"""A :class:`BatchMolGraph` represents a batch of individual :class:`MolGraph`\s.

    It has all the attributes of a ``MolGraph`` with the addition of the ``batch`` attribute. This
    class is intended for use with data loading, so it uses :obj:`~torch.Tensor`\s to store data
    """

    mgs: InitVar[Sequence[MolGraph]]
    r"""A list of individual :class:`MolGraph`\s to be batched together"""
    V: Tensor = field(init=False)
    """the atom feature matrix"""
    E: Tensor = field(init=False)
    """the bond feature matrix"""
    edge_index: Tensor = field(init=False)
    """an tensor of shape ``2 x E`` containing the edges of the graph in COO format"""
    rev_edge_index: Tensor = field(init=False)
    """A tensor of shape ``E`` that maps from an edge index to the index of the source of the
    reverse edge in the ``edge_index`` attribute."""
    batch: Tensor = field(init=False)
    """the index of the parent :class:`MolGraph` in the batched graph"""

    __size: int = field(init=False)

    def __post_init__(self, mgs: Sequence[MolGraph]):
        self.__size = len(mgs)

        Vs = []
        Es = []
        edge_indexes = []
        rev_edge_indexes = []
        batch_indexes = []

        num_nodes = 0
        num_edges = 0
        for i, mg in enumerate(mgs):
            Vs.append(mg.V)
            Es.append(mg.E)
            edge_indexes.append(mg.edge_index + num_nodes)
            rev_edge_indexes.append(mg.rev_edge_index + num_edges)
            batch_indexes.append([i] * len(mg.V))

            num_nodes += mg.V.shape[0]
            num_edges += mg.edge_index.shape[1]

        self.V = torch.from_numpy(np.concatenate(Vs)).float()
        self.E = torch.from_numpy(np.concatenate(Es)).float()
        self.edge_index = torch.from_numpy(np.hstack(edge_indexes)).long()
        self.rev_edge_index = torch.from_numpy(np.concatenate(rev_edge_indexes)).long()
        self.batch = torch.tensor(np.concatenate(batch_indexes)).long()



class _BondMessagePassingMixin:
    def initialize(self, bmg: BatchMolGraph) -> Tensor:
        return self.W_i(torch.cat([bmg.V[bmg.edge_index[0]], bmg.E], dim=1))

    def message(self, H: Tensor, bmg: BatchMolGraph) -> Tensor:
        index_torch = bmg.edge_index[1].unsqueeze(1).repeat(1, H.shape[1])
        M_all = torch.zeros(
            bmg.V.shape[0], H.shape[1], dtype=H.dtype, device=H.device
        ).scatter_reduce_(0, index_torch, H, reduce="sum", include_self=False)[bmg.edge_index[0]]
        M_rev = H[bmg.rev_edge_index]

        return M_all - M_rev



class _MessagePassingBase(nn.Module):
    def __init__(
        self,
        d_v: int = 72,
        d_e: int = 14,
        d_h: int = 300,
        bias: bool = False,
        depth: int = 3,
        dropout: float = 0.0,
        activation: str | nn.Module = "relu",
        undirected: bool = False,
        d_vd: int | None = None,
        V_d_transform: nn.Module | None = None,
        graph_transform: nn.Module | None = None,
    ):
        super().__init__()
        self.W_i, self.W_h, self.W_o, self.W_d = self.setup(d_v, d_e, d_h, d_vd, bias)
        self.depth = depth
        self.undirected = undirected
        self.dropout = nn.Dropout(dropout)
        self.tau = nn.ReLU() if activation == "relu" else activation
        self.V_d_transform = V_d_transform if V_d_transform is not None else nn.Identity()
        self.graph_transform = graph_transform if graph_transform is not None else nn.Identity()

    @property
    def output_dim(self) -> int:
        return self.W_d.out_features if self.W_d is not None else self.W_o.out_features

    def update(self, M_t, H_0):
        """Calcualte the updated hidden for each edge"""
        H_t = self.W_h(M_t)
        H_t = self.tau(H_0 + H_t)
        H_t = self.dropout(H_t)

        return H_t

    def finalize(self, M: Tensor, V: Tensor, V_d: Tensor | None) -> Tensor:
        """Finalize message passing (see the original docstring)."""
        H = self.W_o(torch.cat((V, M), dim=1))  # V x d_o
        H = self.tau(H)
        H = self.dropout(H)

        if V_d is not None:
            V_d = self.V_d_transform(V_d)
            try:
                H = self.W_d(torch.cat((H, V_d), dim=1))  # V x (d_o + d_vd)
                H = self.dropout(H)
            except RuntimeError:
                raise InvalidShapeError(
                    "V_d", V_d.shape, [len(H), self.W_d.in_features - self.W_o.out_features]
                )

        return H

    def forward(self, bmg: BatchMolGraph, V_d: Tensor | None = None) -> Tensor:
        bmg = self.graph_transform(bmg)
        H_0 = self.initialize(bmg)

        H = self.tau(H_0)
        for _ in range(1, self.depth):
            if self.undirected:
                H = (H + H[bmg.rev_edge_index]) / 2

            M = self.message(H, bmg)
            H = self.update(M, H_0)

        index_torch = bmg.edge_index[1].unsqueeze(1).repeat(1, H.shape[1])
        M = torch.zeros(bmg.V.shape[0], H.shape[1], dtype=H.dtype, device=H.device).scatter_reduce_(
            0, index_torch, H, reduce="sum", include_self=False
        )
        return self.finalize(M, bmg.V, V_d)



class BondMessagePassing(_BondMessagePassingMixin, _MessagePassingBase):
    def setup(
        self,
        d_v: int = 72,
        d_e: int = 14,
        d_h: int = 300,
        d_vd: int | None = None,
        bias: bool = False,
    ):
        W_i = nn.Linear(d_v + d_e, d_h, bias)
        W_h = nn.Linear(d_h, d_h, bias)
        W_o = nn.Linear(d_v + d_h, d_h)
        W_d = nn.Linear(d_h + d_vd, d_h + d_vd) if d_vd else None

        return W_i, W_h, W_o, W_d



class Aggregation(nn.Module):
    def __init__(self, dim: int = 0, *args, **kwargs):
        super().__init__()
        self.dim = dim
        self.hparams = {"dim": dim, "cls": self.__class__}


class MeanAggregation(Aggregation):
    def forward(self, H: Tensor, batch: Tensor) -> Tensor:
        index_torch = batch.unsqueeze(1).repeat(1, H.shape[1])
        dim_size = batch.max().int() + 1
        return torch.zeros(dim_size, H.shape[1], dtype=H.dtype, device=H.device).scatter_reduce_(
            self.dim, index_torch, H, reduce="mean", include_self=False
        )


class MPNN(nn.Module):
    def __init__(self, message_passing, agg, predictor, batch_norm: bool = False, X_d_transform=None):
        super().__init__()
        self.message_passing = message_passing
        self.agg = agg
        self.bn = nn.BatchNorm1d(self.message_passing.output_dim) if batch_norm else nn.Identity()
        self.predictor = predictor

        self.X_d_transform = X_d_transform if X_d_transform is not None else nn.Identity()

    def fingerprint(
        self, bmg: BatchMolGraph, V_d: Tensor | None = None, X_d: Tensor | None = None
    ) -> Tensor:
        """the learned fingerprints for the input molecules"""
        H_v = self.message_passing(bmg, V_d)
        H = self.agg(H_v, bmg.batch)
        H = self.bn(H)

        return H if X_d is None else torch.cat((H, self.X_d_transform(X_d)), dim=1)

    def forward(
        self, bmg: BatchMolGraph, V_d: Tensor | None = None, X_d: Tensor | None = None
    ) -> Tensor:
        """Generate predictions for the input molecules/reactions"""
        return self.predictor(self.fingerprint(bmg, V_d, X_d))


def build_model(d_xd=0):
    mp = BondMessagePassing(d_v=4, d_e=3, d_h=8, depth=3, undirected=True)
    predictor = nn.Sequential(nn.Linear(8 + d_xd, 8), nn.ReLU(), nn.Linear(8, 1))
    return MPNN(mp, MeanAggregation(), predictor, batch_norm=True)


def _chain(n_atoms, seed):
    """A linear molecule: bonds i<->i+1 in both directions, reverse indices paired."""
    rng = np.random.RandomState(seed)
    src, dst = [], []
    for i in range(n_atoms - 1):
        src += [i, i + 1]
        dst += [i + 1, i]
    edge_index = np.array([src, dst], dtype=np.int64)
    rev = np.array([j ^ 1 for j in range(len(src))], dtype=np.int64)
    V = rng.rand(n_atoms, 4).astype(np.float32)
    E = rng.rand(len(src), 3).astype(np.float32)
    return MolGraph(V, E, edge_index, rev)


model = torch.compile(build_model().eval())


def make():
    torch.manual_seed(0)
    net = build_model().eval()
    bmg2 = BatchMolGraph([_chain(3, 0), _chain(4, 1)])
    bmg3 = BatchMolGraph([_chain(2, 2), _chain(5, 3), _chain(3, 4)])
    return net, [(bmg2,), (bmg3,)]
