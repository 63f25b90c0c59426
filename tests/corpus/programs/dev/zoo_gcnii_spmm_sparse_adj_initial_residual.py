"""GCNII: every GraphConvolution layer propagates with `torch.spmm` over a sparse COO normalized adjacency, mixes in the initial representation (`alpha`) and an identity map weighted by `math.log(lamda/l+1)`.

Source: chennnM/GCNII@4a87bfeee74176353b103444bbb9ca25767685c0:model.py:8-67
Kept: GraphConvolution and GCNII verbatim (params1/params2 lists, dropout
with training=self.training, the _layers list); sys_normalized_adjacency and
sparse_mx_to_torch_sparse_tensor from utils.py; the model built as in train.py
and evaluated as in validate().
Simplified: scipy.sparse is replaced by numpy for the normalization, and the
COO tensor is built with torch.sparse_coo_tensor (torch.sparse.FloatTensor is
deprecated); 6 nodes, 5 features, 4 layers of width 8.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parameter import Parameter


def sys_normalized_adjacency(adj):
    adj = adj + np.eye(adj.shape[0])
    row_sum = np.array(adj.sum(1))
    row_sum = (row_sum == 0) * 1 + row_sum
    d_inv_sqrt = np.power(row_sum, -0.5).flatten()
    d_inv_sqrt[np.isinf(d_inv_sqrt)] = 0.
    d_mat_inv_sqrt = np.diag(d_inv_sqrt)
    return d_mat_inv_sqrt.dot(adj).dot(d_mat_inv_sqrt)


def sparse_mx_to_torch_sparse_tensor(sparse_mx):
    """Convert a (dense numpy stand-in of a) scipy sparse matrix to a torch sparse tensor."""
    sparse_mx = sparse_mx.astype(np.float32)
    row, col = np.nonzero(sparse_mx)
    indices = torch.from_numpy(
        np.vstack((row, col)).astype(np.int64))
    values = torch.from_numpy(sparse_mx[row, col])
    shape = torch.Size(sparse_mx.shape)
    return torch.sparse_coo_tensor(indices, values, shape)


class GraphConvolution(nn.Module):

    def __init__(self, in_features, out_features, residual=False, variant=False):
        super(GraphConvolution, self).__init__()
        self.variant = variant
        if self.variant:
            self.in_features = 2*in_features
        else:
            self.in_features = in_features

        self.out_features = out_features
        self.residual = residual
        self.weight = Parameter(torch.FloatTensor(self.in_features,self.out_features))
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1. / math.sqrt(self.out_features)
        self.weight.data.uniform_(-stdv, stdv)

    def forward(self, input, adj , h0 , lamda, alpha, l):
        theta = math.log(lamda/l+1)
        hi = torch.spmm(adj, input)
        if self.variant:
            support = torch.cat([hi,h0],1)
            r = (1-alpha)*hi+alpha*h0
        else:
            support = (1-alpha)*hi+alpha*h0
            r = support
        output = theta*torch.mm(support, self.weight)+(1-theta)*r
        if self.residual:
            output = output+input
        return output


class GCNII(nn.Module):
    def __init__(self, nfeat, nlayers,nhidden, nclass, dropout, lamda, alpha, variant):
        super(GCNII, self).__init__()
        self.convs = nn.ModuleList()
        for _ in range(nlayers):
            self.convs.append(GraphConvolution(nhidden, nhidden,variant=variant))
        self.fcs = nn.ModuleList()
        self.fcs.append(nn.Linear(nfeat, nhidden))
        self.fcs.append(nn.Linear(nhidden, nclass))
        self.params1 = list(self.convs.parameters())
        self.params2 = list(self.fcs.parameters())
        self.act_fn = nn.ReLU()
        self.dropout = dropout
        self.alpha = alpha
        self.lamda = lamda

    def forward(self, x, adj):
        _layers = []
        x = F.dropout(x, self.dropout, training=self.training)
        layer_inner = self.act_fn(self.fcs[0](x))
        _layers.append(layer_inner)
        for i,con in enumerate(self.convs):
            layer_inner = F.dropout(layer_inner, self.dropout, training=self.training)
            layer_inner = self.act_fn(con(layer_inner,adj,_layers[0],self.lamda,self.alpha,i+1))
        layer_inner = F.dropout(layer_inner, self.dropout, training=self.training)
        layer_inner = self.fcs[-1](layer_inner)
        return F.log_softmax(layer_inner, dim=1)


def build_model(nfeat, nclass, variant=False):
    model = GCNII(nfeat=nfeat, nlayers=4, nhidden=8, nclass=nclass,
                  dropout=0.6, lamda=0.5, alpha=0.1, variant=variant)
    return torch.compile(model)


def make():
    torch.manual_seed(0)
    edges = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0), (1, 4)]
    dense = np.zeros((6, 6))
    for a, b in edges:
        dense[a, b] = dense[b, a] = 1.0
    adj = sparse_mx_to_torch_sparse_tensor(sys_normalized_adjacency(dense))
    features = torch.rand(6, 5)
    model = GCNII(nfeat=5, nlayers=4, nhidden=8, nclass=3, dropout=0.6,
                  lamda=0.5, alpha=0.1, variant=True)
    return model.eval(), [(features, adj)]
