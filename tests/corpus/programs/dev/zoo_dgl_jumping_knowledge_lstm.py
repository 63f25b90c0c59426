"""DGL JumpingKnowledge in 'lstm' mode: per-layer node features stacked and scored by a bidirectional nn.LSTM, inside a JKNet-style model.

Source: dmlc/dgl (python/dgl/nn/pytorch/utils.py, the version with JumpingKnowledge and LabelPropagation; index copy id 781600627; the stored 375e31b95263af9d00a4559891420fc96e5efff7 copy predates the class):python/dgl/nn/pytorch/utils.py:JumpingKnowledge
Also: dgl examples/pytorch/jknet (JKNet: GNN layers, JumpingKnowledge, readout).
Kept: JumpingKnowledge's constructor asserts and LSTM sizing
((num_layers * in_feats) // 2, bidirectional, batch_first), reset_parameters,
and the cat / max / lstm forward switch as written.
Simplified: dgl.GraphConv replaced by a dense normalized-adjacency layer
(the graph is a dense adjacency tensor argument); 3 layers of 4 features.
"""
import torch as th
from torch import nn


class JumpingKnowledge(nn.Module):
    def __init__(self, mode="cat", in_feats=None, num_layers=None):
        super(JumpingKnowledge, self).__init__()
        assert mode in [
            "cat",
            "max",
            "lstm",
        ], "Expect mode to be 'cat', or 'max' or 'lstm', got {}".format(mode)
        self.mode = mode

        if mode == "lstm":
            assert in_feats is not None, "in_feats is required for lstm mode"
            assert (
                num_layers is not None
            ), "num_layers is required for lstm mode"
            hidden_size = (num_layers * in_feats) // 2
            self.lstm = nn.LSTM(
                in_feats, hidden_size, bidirectional=True, batch_first=True
            )
            self.att = nn.Linear(2 * hidden_size, 1)

    def reset_parameters(self):
        if self.mode == "lstm":
            self.lstm.reset_parameters()
            self.att.reset_parameters()

    def forward(self, feat_list):
        if self.mode == "cat":
            return th.cat(feat_list, dim=-1)
        elif self.mode == "max":
            return th.stack(feat_list, dim=-1).max(dim=-1)[0]
        else:
            # LSTM
            stacked_feat_list = th.stack(
                feat_list, dim=1
            )  # (N, num_layers, in_feats)
            alpha, _ = self.lstm(stacked_feat_list)
            alpha = self.att(alpha).squeeze(-1)  # (N, num_layers)
            alpha = th.softmax(alpha, dim=-1)
            return (stacked_feat_list * alpha.unsqueeze(-1)).sum(dim=1)


class DenseGraphConv(nn.Module):
    """Stand-in for dgl.nn.GraphConv(norm='both') on a dense adjacency."""

    def __init__(self, in_feats, out_feats, activation=None):
        super().__init__()
        self.linear = nn.Linear(in_feats, out_feats)
        self.activation = activation

    def forward(self, adj, feat):
        deg = adj.sum(dim=1).clamp(min=1)
        norm = th.pow(deg, -0.5)
        h = norm.unsqueeze(1) * (adj @ (norm.unsqueeze(1) * feat))
        h = self.linear(h)
        if self.activation is not None:
            h = self.activation(h)
        return h


class JKNet(nn.Module):
    def __init__(self, in_dim, hid_dim, out_dim, num_layers=1, mode="cat", dropout=0.0):
        super(JKNet, self).__init__()

        self.mode = mode
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList()
        self.layers.append(DenseGraphConv(in_dim, hid_dim, activation=th.relu))
        for _ in range(num_layers):
            self.layers.append(DenseGraphConv(hid_dim, hid_dim, activation=th.relu))

        if self.mode == "lstm":
            self.jump = JumpingKnowledge(mode, hid_dim, num_layers)
        else:
            self.jump = JumpingKnowledge(mode)

        if self.mode == "cat":
            hid_dim = hid_dim * (num_layers + 1)

        self.output = nn.Linear(hid_dim, out_dim)

    def forward(self, adj, feats):
        feat_lst = []
        for layer in self.layers:
            feats = self.dropout(layer(adj, feats))
            feat_lst.append(feats)

        h = self.jump(feat_lst)
        return self.output(h)


model = th.compile(JKNet(5, 4, 3, num_layers=2, mode="lstm"))


def make():
    th.manual_seed(0)
    adj = (th.rand(6, 6) > 0.5).float()
    adj = ((adj + adj.t()) > 0).float()
    return JKNet(5, 4, 3, num_layers=2, mode="lstm"), [(adj, th.randn(6, 5))]
