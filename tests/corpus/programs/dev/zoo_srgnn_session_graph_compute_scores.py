"""SR-GNN session recommendation: gated graph cell, per-session alias gather with a list comprehension
over `torch.arange`, and attention-pooled scores against the item table.

Source: CRIPAC-DIG/SR-GNN@cf724b1a748e5a238dd008aaac8b68e3039fd581:pytorch_code/model.py:17-93,109-119
Kept: GNN.GNNCell/forward verbatim (A sliced by A.shape[1], gi/gh chunk(3), the `step` loop),
SessionGraph.compute_scores verbatim (`hidden[torch.arange(...), torch.sum(mask, 1) - 1]`, the
`nonhybrid` flag, `embedding.weight[1:]`), and the tensor half of the module-level `forward` helper
(`get = lambda i: hidden[i][alias_inputs[i]]`, `torch.stack([get(i) for i in torch.arange(len(alias_inputs)).long()])`,
tuple return of targets and scores), which is what gets compiled.
Simplified: the numpy -> tensor conversion of `data.get_slice(i)` happens before the call; no optimizer /
scheduler construction in __init__; hidden size 8, 12 items.
"""
import math

import torch
from torch import nn
from torch.nn import Module, Parameter
import torch.nn.functional as F


class Opt:
    hiddenSize = 8
    batchSize = 2
    nonhybrid = False
    step = 1


class GNN(Module):
    def __init__(self, hidden_size, step=1):
        super(GNN, self).__init__()
        self.step = step
        self.hidden_size = hidden_size
        self.input_size = hidden_size * 2
        self.gate_size = 3 * hidden_size
        self.w_ih = Parameter(torch.Tensor(self.gate_size, self.input_size))
        self.w_hh = Parameter(torch.Tensor(self.gate_size, self.hidden_size))
        self.b_ih = Parameter(torch.Tensor(self.gate_size))
        self.b_hh = Parameter(torch.Tensor(self.gate_size))
        self.b_iah = Parameter(torch.Tensor(self.hidden_size))
        self.b_oah = Parameter(torch.Tensor(self.hidden_size))

        self.linear_edge_in = nn.Linear(self.hidden_size, self.hidden_size, bias=True)
        self.linear_edge_out = nn.Linear(self.hidden_size, self.hidden_size, bias=True)
        self.linear_edge_f = nn.Linear(self.hidden_size, self.hidden_size, bias=True)

    def GNNCell(self, A, hidden):
        input_in = torch.matmul(A[:, :, :A.shape[1]], self.linear_edge_in(hidden)) + self.b_iah
        input_out = torch.matmul(A[:, :, A.shape[1]: 2 * A.shape[1]], self.linear_edge_out(hidden)) + self.b_oah
        inputs = torch.cat([input_in, input_out], 2)
        gi = F.linear(inputs, self.w_ih, self.b_ih)
        gh = F.linear(hidden, self.w_hh, self.b_hh)
        i_r, i_i, i_n = gi.chunk(3, 2)
        h_r, h_i, h_n = gh.chunk(3, 2)
        resetgate = torch.sigmoid(i_r + h_r)
        inputgate = torch.sigmoid(i_i + h_i)
        newgate = torch.tanh(i_n + resetgate * h_n)
        hy = newgate + inputgate * (hidden - newgate)
        return hy

    def forward(self, A, hidden):
        for i in range(self.step):
            hidden = self.GNNCell(A, hidden)
        return hidden


class SessionGraph(Module):
    def __init__(self, opt, n_node):
        super(SessionGraph, self).__init__()
        self.hidden_size = opt.hiddenSize
        self.n_node = n_node
        self.batch_size = opt.batchSize
        self.nonhybrid = opt.nonhybrid
        self.embedding = nn.Embedding(self.n_node, self.hidden_size)
        self.gnn = GNN(self.hidden_size, step=opt.step)
        self.linear_one = nn.Linear(self.hidden_size, self.hidden_size, bias=True)
        self.linear_two = nn.Linear(self.hidden_size, self.hidden_size, bias=True)
        self.linear_three = nn.Linear(self.hidden_size, 1, bias=False)
        self.linear_transform = nn.Linear(self.hidden_size * 2, self.hidden_size, bias=True)
        self.loss_function = nn.CrossEntropyLoss()
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            weight.data.uniform_(-stdv, stdv)

    def compute_scores(self, hidden, mask):
        ht = hidden[torch.arange(mask.shape[0]).long(), torch.sum(mask, 1) - 1]  # batch_size x latent_size
        q1 = self.linear_one(ht).view(ht.shape[0], 1, ht.shape[1])  # batch_size x 1 x latent_size
        q2 = self.linear_two(hidden)  # batch_size x seq_length x latent_size
        alpha = self.linear_three(torch.sigmoid(q1 + q2))
        a = torch.sum(alpha * hidden * mask.view(mask.shape[0], -1, 1).float(), 1)
        if not self.nonhybrid:
            a = self.linear_transform(torch.cat([a, ht], 1))
        b = self.embedding.weight[1:]  # n_nodes x latent_size
        scores = torch.matmul(a, b.transpose(1, 0))
        return scores

    def forward(self, inputs, A):
        hidden = self.embedding(inputs)
        hidden = self.gnn(A, hidden)
        return hidden


def forward(model, alias_inputs, A, items, mask, targets):
    hidden = model(items, A)
    get = lambda i: hidden[i][alias_inputs[i]]
    seq_hidden = torch.stack([get(i) for i in torch.arange(len(alias_inputs)).long()])
    return targets, model.compute_scores(seq_hidden, mask)


compiled_forward = torch.compile(forward)


def _batch():
    # what Data.get_slice returns for sessions [3, 5, 3, 0] and [7, 2, 9, 4], already as tensors
    alias_inputs = torch.tensor([[1, 2, 1, 0], [2, 0, 3, 1]])
    items = torch.tensor([[0, 3, 5, 0], [2, 4, 7, 9]])
    A = torch.zeros(2, 4, 8)
    A[0, 1, 2] = 1.0
    A[0, 2, 1] = 1.0
    A[0, 1, 6] = 1.0
    A[0, 2, 5] = 1.0
    A[1, 2, 0] = 1.0
    A[1, 0, 3] = 1.0
    A[1, 3, 1] = 1.0
    A[1, 0, 6] = 1.0
    A[1, 3, 4] = 1.0
    A[1, 1, 7] = 1.0
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])
    targets = torch.tensor([5, 11])
    return alias_inputs, A, items, mask, targets


def make():
    torch.manual_seed(0)
    model = SessionGraph(Opt(), 12)
    alias_inputs, A, items, mask, targets = _batch()
    return forward, [(model, alias_inputs, A, items, mask, targets)]
