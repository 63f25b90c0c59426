"""GAE-pytorch GCNModelVAE: two-layer GCN encoder over a sparse normalized adjacency (`torch.spmm`), training-only reparameterization, inner-product decoder.

Source: zfjsail/gae-pytorch@311537811dcc5fce04ed02c5f62f20f0614ca1e4:gae/model.py:1-47 (with gae/layers.py:1-35 at 00f1154f0a51665cf81235213fee88f068e3be5e)
Kept: GraphConvolution (functional dropout with self.training, torch.mm,
torch.spmm against the sparse adj, act callable), GCNModelVAE (gc1/gc2/gc3
with lambda activations, encode tuple, reparameterize's self.training switch,
(dc(z), mu, logvar) return), InnerProductDecoder; the adjacency is a sparse
COO tensor built like utils.preprocess_graph + sparse_mx_to_torch_sparse_tensor.
Simplified: scipy preprocessing replaced by the same D^-1/2 (A+I) D^-1/2
computed in torch; the training loop of gae/train.py (gae_for) compiles the
model and calls it in train mode; loss/optimizer dropped. 6 nodes, 5
features, hidden 8/4.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.modules.module import Module
from torch.nn.parameter import Parameter


class GraphConvolution(Module):
    """
    Simple GCN layer, similar to https://arxiv.org/abs/1609.02907
    """

    def __init__(self, in_features, out_features, dropout=0., act=F.relu):
        super(GraphConvolution, self).__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.dropout = dropout
        self.act = act
        self.weight = Parameter(torch.FloatTensor(in_features, out_features))
        self.reset_parameters()

    def reset_parameters(self):
        torch.nn.init.xavier_uniform_(self.weight)

    def forward(self, input, adj):
        input = F.dropout(input, self.dropout, self.training)
        support = torch.mm(input, self.weight)
        output = torch.spmm(adj, support)
        output = self.act(output)
        return output

    def __repr__(self):
        return self.__class__.__name__ + ' (' \
               + str(self.in_features) + ' -> ' \
               + str(self.out_features) + ')'


class GCNModelVAE(nn.Module):
    def __init__(self, input_feat_dim, hidden_dim1, hidden_dim2, dropout):
        super(GCNModelVAE, self).__init__()
        self.gc1 = GraphConvolution(input_feat_dim, hidden_dim1, dropout, act=F.relu)
        self.gc2 = GraphConvolution(hidden_dim1, hidden_dim2, dropout, act=lambda x: x)
        self.gc3 = GraphConvolution(hidden_dim1, hidden_dim2, dropout, act=lambda x: x)
        self.dc = InnerProductDecoder(dropout, act=lambda x: x)

    def encode(self, x, adj):
        hidden1 = self.gc1(x, adj)
        return self.gc2(hidden1, adj), self.gc3(hidden1, adj)

    def reparameterize(self, mu, logvar):
        if self.training:
            std = torch.exp(logvar)
            eps = torch.randn_like(std)
            return eps.mul(std).add_(mu)
        else:
            return mu

    def forward(self, x, adj):
        mu, logvar = self.encode(x, adj)
        z = self.reparameterize(mu, logvar)
        return self.dc(z), mu, logvar


class InnerProductDecoder(nn.Module):
    """Decoder for using inner product for prediction."""

    def __init__(self, dropout, act=torch.sigmoid):
        super(InnerProductDecoder, self).__init__()
        self.dropout = dropout
        self.sigmoid = act

    def forward(self, z):
        z = F.dropout(z, self.dropout, training=self.training)
        adj = self.sigmoid(torch.mm(z, z.t()))
        return adj


def preprocess_graph(adj):
    adj_ = adj + torch.eye(adj.shape[0])
    rowsum = adj_.sum(1)
    degree_mat_inv_sqrt = torch.diag(rowsum.pow(-0.5))
    adj_normalized = adj_ @ degree_mat_inv_sqrt
    adj_normalized = degree_mat_inv_sqrt @ adj_normalized
    return adj_normalized.to_sparse_coo()


def build_model():
    return GCNModelVAE(5, 8, 4, 0.0)


def gae_for(features, adj_norm, epochs=1):
    model = build_model()
    model = torch.compile(model)
    for epoch in range(epochs):
        model.train()
        recovered, mu, logvar = model(features, adj_norm)
    return recovered, mu, logvar


def make():
    torch.manual_seed(0)
    a = (torch.rand(6, 6) > 0.6).float()
    adj = ((a + a.t()) > 0).float().fill_diagonal_(0)
    features = torch.randn(6, 5)
    adj_norm = preprocess_graph(adj)
    return build_model().train(), [(features, adj_norm)]
