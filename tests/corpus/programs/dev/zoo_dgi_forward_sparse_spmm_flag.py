"""Deep Graph Infomax forward: a shared GCN run on clean and row-shuffled features with either a sparse adjacency (`torch.spmm` after `torch.squeeze(seq_fts, 0)`) or a dense batched one, chosen by a Python `sparse` flag; AvgReadout with `msk=None` (as execute.py passes) and a Bilinear discriminator with optional score biases.

Source: PetarV-/DGI@f74d4058a1d2ce52b60c03f28279ea18d23df3b1:models/dgi.py:1-33
Also: layers/gcn.py, layers/discriminator.py (same commit), layers/readout.py
(d8dc0f875fd70b2d64bf72e346c818e7e908ded9); execute.py builds `sp_adj` with
process.sparse_mx_to_torch_sparse_tensor and calls
`model(features, shuf_fts, sp_adj if sparse else adj, sparse, None, None, None)`.
Kept: DGI, GCN (including `nn.PReLU() if 'prelu' else act`), AvgReadout, Discriminator verbatim.
Simplified: a 6-node ring graph built with torch instead of the Cora files and scipy; 5 features,
8 hidden units.
"""
import numpy as np
import torch
import torch.nn as nn


class GCN(nn.Module):
    def __init__(self, in_ft, out_ft, act, bias=True):
        super(GCN, self).__init__()
        self.fc = nn.Linear(in_ft, out_ft, bias=False)
        self.act = nn.PReLU() if 'prelu' else act

        if bias:
            self.bias = nn.Parameter(torch.FloatTensor(out_ft))
            self.bias.data.fill_(0.0)
        else:
            self.register_parameter('bias', None)

        for m in self.modules():
            self.weights_init(m)

    def weights_init(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight.data)
            if m.bias is not None:
                m.bias.data.fill_(0.0)

    # Shape of seq: (batch, nodes, features)
    def forward(self, seq, adj, sparse=False):
        seq_fts = self.fc(seq)
        if sparse:
            out = torch.unsqueeze(torch.spmm(adj, torch.squeeze(seq_fts, 0)), 0)
        else:
            out = torch.bmm(adj, seq_fts)
        if self.bias is not None:
            out += self.bias

        return self.act(out)


# Applies an average on seq, of shape (batch, nodes, features)
# While taking into account the masking of msk
class AvgReadout(nn.Module):
    def __init__(self):
        super(AvgReadout, self).__init__()

    def forward(self, seq, msk):
        if msk is None:
            return torch.mean(seq, 1)
        else:
            msk = torch.unsqueeze(msk, -1)
            return torch.sum(seq * msk, 1) / torch.sum(msk, 1).unsqueeze(1)


class Discriminator(nn.Module):
    def __init__(self, n_h):
        super(Discriminator, self).__init__()
        self.f_k = nn.Bilinear(n_h, n_h, 1)

        for m in self.modules():
            self.weights_init(m)

    def weights_init(self, m):
        if isinstance(m, nn.Bilinear):
            torch.nn.init.xavier_uniform_(m.weight.data)
            if m.bias is not None:
                m.bias.data.fill_(0.0)

    def forward(self, c, h_pl, h_mi, s_bias1=None, s_bias2=None):
        c_x = torch.unsqueeze(c, 1)
        c_x = c_x.expand_as(h_pl)

        sc_1 = torch.squeeze(self.f_k(h_pl, c_x), 2)
        sc_2 = torch.squeeze(self.f_k(h_mi, c_x), 2)

        if s_bias1 is not None:
            sc_1 += s_bias1
        if s_bias2 is not None:
            sc_2 += s_bias2

        logits = torch.cat((sc_1, sc_2), 1)

        return logits


class DGI(nn.Module):
    def __init__(self, n_in, n_h, activation):
        super(DGI, self).__init__()
        self.gcn = GCN(n_in, n_h, activation)
        self.read = AvgReadout()

        self.sigm = nn.Sigmoid()

        self.disc = Discriminator(n_h)

    def forward(self, seq1, seq2, adj, sparse, msk, samp_bias1, samp_bias2):
        h_1 = self.gcn(seq1, adj, sparse)

        c = self.read(h_1, msk)
        c = self.sigm(c)

        h_2 = self.gcn(seq2, adj, sparse)

        ret = self.disc(c, h_1, h_2, samp_bias1, samp_bias2)

        return ret

    # Detach the return variables
    def embed(self, seq, adj, sparse, msk):
        h_1 = self.gcn(seq, adj, sparse)
        c = self.read(h_1, msk)

        return h_1.detach(), c.detach()


def ring_graph(nb_nodes):
    a = torch.eye(nb_nodes)
    for i in range(nb_nodes):
        a[i, (i + 1) % nb_nodes] = 1.0
        a[(i + 1) % nb_nodes, i] = 1.0
    d = a.sum(1).pow(-0.5)
    return d[:, None] * a * d[None, :]


def train_setup(ft_size=5, hid_units=8, nonlinearity='prelu'):
    model = DGI(ft_size, hid_units, nonlinearity)
    model = torch.compile(model)
    return model


def make():
    torch.manual_seed(0)
    nb_nodes, ft_size, hid_units = 6, 5, 8
    model = DGI(ft_size, hid_units, 'prelu')
    features = torch.randn(1, nb_nodes, ft_size)
    idx = np.random.RandomState(0).permutation(nb_nodes)
    shuf_fts = features[:, idx, :]
    adj = ring_graph(nb_nodes)
    sp_adj = adj.to_sparse()
    return model, [
        (features, shuf_fts, sp_adj, True, None, None, None),
        (features, shuf_fts, adj[None], False, None, None, None),
        (features, shuf_fts, adj[None], False, None, torch.zeros(1, nb_nodes), torch.full((1, nb_nodes), 0.5)),
    ]
