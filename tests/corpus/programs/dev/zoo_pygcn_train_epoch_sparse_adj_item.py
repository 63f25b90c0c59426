"""pygcn training epoch: `train(epoch)` switches `model.train()`, runs the two-layer GCN (dense `torch.mm` then `torch.spmm` with a sparse COO adjacency), NLL loss and `accuracy` on index tensors, backward/step, `model.eval()` re-run unless `args.fastmode`, and prints four `.item()` values.

Source: tkipf/pygcn@1600b5b748b3976413d1e307540ccc62605b4d6d:pygcn/train.py:62-87
Also: pygcn/layers.py:1-44 (GraphConvolution), pygcn/models.py:1-18 (GCN), pygcn/utils.py:64-78
(accuracy, sparse_mx_to_torch_sparse_tensor), train.py:1-60 (args, model/optimizer set-up).
Kept: train(), GraphConvolution, GCN, accuracy and sparse_mx_to_torch_sparse_tensor's tensor
construction verbatim.
Simplified: argparse replaced by an Args class with the defaults; load_data (Cora files, scipy.sparse
normalisation) replaced by a random 40-node graph row-normalised in numpy and turned into
`torch.sparse.FloatTensor(indices, values, shape)` as sparse_mx_to_torch_sparse_tensor does; the
epoch function is compiled with torch.compile; the print's `'time: {:.4f}s'.format(time.time() - t)`
field is dropped (the corpus prints deterministic text), `t = time.time()` is kept.
"""
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.nn.parameter import Parameter
from torch.nn.modules.module import Module


# ---- pygcn/layers.py ----
class GraphConvolution(Module):
    """
    Simple GCN layer, similar to https://arxiv.org/abs/1609.02907
    """

    def __init__(self, in_features, out_features, bias=True):
        super(GraphConvolution, self).__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(torch.FloatTensor(in_features, out_features))
        if bias:
            self.bias = Parameter(torch.FloatTensor(out_features))
        else:
            self.register_parameter('bias', None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1. / math.sqrt(self.weight.size(1))
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        output = torch.spmm(adj, support)
        if self.bias is not None:
            return output + self.bias
        else:
            return output

    def __repr__(self):
        return self.__class__.__name__ + ' (' \
               + str(self.in_features) + ' -> ' \
               + str(self.out_features) + ')'


# ---- pygcn/models.py ----
class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super(GCN, self).__init__()

        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        x = self.gc2(x, adj)
        return F.log_softmax(x, dim=1)


# ---- pygcn/utils.py ----
def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    correct = preds.eq(labels).double()
    correct = correct.sum()
    return correct / len(labels)


class Args:
    no_cuda = False
    fastmode = False
    seed = 42
    epochs = 200
    lr = 0.01
    weight_decay = 5e-4
    hidden = 16
    dropout = 0.5


args = Args()
args.cuda = not args.no_cuda and torch.cuda.is_available()

np.random.seed(args.seed)
torch.manual_seed(args.seed)


def load_data(n=40, nfeat=12, nclass=3):
    rng = np.random.RandomState(0)
    features = rng.rand(n, nfeat).astype(np.float32)
    features = features / features.sum(1, keepdims=True)
    labels = rng.randint(0, nclass, n)
    dense = (rng.rand(n, n) < 0.1).astype(np.float32)
    dense = np.maximum(dense, dense.T) + np.eye(n, dtype=np.float32)
    dense = dense / dense.sum(1, keepdims=True)
    row, col = np.nonzero(dense)
    indices = torch.from_numpy(np.vstack((row, col)).astype(np.int64))
    values = torch.from_numpy(dense[row, col].astype(np.float32))
    shape = torch.Size(dense.shape)
    adj = torch.sparse.FloatTensor(indices, values, shape)
    idx_train = torch.LongTensor(range(14))
    idx_val = torch.LongTensor(range(14, 24))
    idx_test = torch.LongTensor(range(24, 40))
    return adj, torch.FloatTensor(features), torch.LongTensor(labels), idx_train, idx_val, idx_test


# Load data
adj, features, labels, idx_train, idx_val, idx_test = load_data()

# Model and optimizer
model = GCN(nfeat=features.shape[1],
            nhid=args.hidden,
            nclass=labels.max().item() + 1,
            dropout=args.dropout)
optimizer = optim.Adam(model.parameters(),
                       lr=args.lr, weight_decay=args.weight_decay)


def train(epoch):
    t = time.time()
    model.train()
    optimizer.zero_grad()
    output = model(features, adj)
    loss_train = F.nll_loss(output[idx_train], labels[idx_train])
    acc_train = accuracy(output[idx_train], labels[idx_train])
    loss_train.backward()
    optimizer.step()

    if not args.fastmode:
        # Evaluate validation set performance separately,
        # deactivates dropout during validation run.
        model.eval()
        output = model(features, adj)

    loss_val = F.nll_loss(output[idx_val], labels[idx_val])
    acc_val = accuracy(output[idx_val], labels[idx_val])
    print('Epoch: {:04d}'.format(epoch+1),
          'loss_train: {:.4f}'.format(loss_train.item()),
          'acc_train: {:.4f}'.format(acc_train.item()),
          'loss_val: {:.4f}'.format(loss_val.item()),
          'acc_val: {:.4f}'.format(acc_val.item()))


compiled_train = torch.compile(train)


def make():
    return train, [(0,), (1,)]
