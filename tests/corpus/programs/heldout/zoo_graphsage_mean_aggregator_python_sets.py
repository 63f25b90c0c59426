"""GraphSAGE (graphsage-simple): the mean aggregator builds its neighbour mask from Python sets, a node->column dict and index lists, and looks features up with `torch.LongTensor(list)`; two encoders are stacked through a lambda.

Source: williamleif/graphsage-simple@314f98be0803f84e9a4890bf74ba9d902c36089b:graphsage/aggregators.py:1-64 (with graphsage/encoders.py and graphsage/model.py:SupervisedGraphSage, run_cora's wiring)
Kept: MeanAggregator.forward unchanged (local `_set`/`_sample` pointers, the
num_sample test, set.union, the unique_nodes dict, Variable mask filled by
row/column index lists, mask.div(num_neigh), features(torch.LongTensor(...))),
Encoder.forward (adj_lists lookups per node, the gcn/cuda switches,
self-feature concat, weight.mm(combined.t())), SupervisedGraphSage forward,
and run_cora's two-level wiring with `lambda nodes: enc1(nodes).t()` and the
`enc1.num_samples = 5` attribute (which, as in the original, leaves
num_sample at its default 10).
Simplified: Cora is replaced by a 7-node graph with degree < 10, so the
random.sample side is not reached (as with most Cora nodes); gcn=False for
both encoders because the original's gcn branch does `set + set`, which
raises TypeError. Feature dim 5, embed dim 6, 3 classes.
"""
from collections import defaultdict
import random

import torch
import torch.nn as nn
from torch.nn import init
import torch.nn.functional as F
from torch.autograd import Variable


class MeanAggregator(nn.Module):
    """
    Aggregates a node's embeddings using mean of neighbors' embeddings
    """
    def __init__(self, features, cuda=False, gcn=False):
        """
        Initializes the aggregator for a specific graph.

        features -- function mapping LongTensor of node ids to FloatTensor of feature values.
        cuda -- whether to use GPU
        gcn --- whether to perform concatenation GraphSAGE-style, or add self-loops GCN-style
        """

        super(MeanAggregator, self).__init__()

        self.features = features
        self.cuda = cuda
        self.gcn = gcn

    def forward(self, nodes, to_neighs, num_sample=10):
        """
        nodes --- list of nodes in a batch
        to_neighs --- list of sets, each set is the set of neighbors for node in batch
        num_sample --- number of neighbors to sample. No sampling if None.
        """
        # Local pointers to functions (speed hack)
        _set = set
        if not num_sample is None:
            _sample = random.sample
            samp_neighs = [_set(_sample(to_neigh,
                            num_sample,
                            )) if len(to_neigh) >= num_sample else to_neigh for to_neigh in to_neighs]
        else:
            samp_neighs = to_neighs

        if self.gcn:
            samp_neighs = [samp_neigh + set([nodes[i]]) for i, samp_neigh in enumerate(samp_neighs)]
        unique_nodes_list = list(set.union(*samp_neighs))
        unique_nodes = {n:i for i,n in enumerate(unique_nodes_list)}
        mask = Variable(torch.zeros(len(samp_neighs), len(unique_nodes)))
        column_indices = [unique_nodes[n] for samp_neigh in samp_neighs for n in samp_neigh]
        row_indices = [i for i in range(len(samp_neighs)) for j in range(len(samp_neighs[i]))]
        mask[row_indices, column_indices] = 1
        if self.cuda:
            mask = mask.cuda()
        num_neigh = mask.sum(1, keepdim=True)
        mask = mask.div(num_neigh)
        if self.cuda:
            embed_matrix = self.features(torch.LongTensor(unique_nodes_list).cuda())
        else:
            embed_matrix = self.features(torch.LongTensor(unique_nodes_list))
        to_feats = mask.mm(embed_matrix)
        return to_feats


class Encoder(nn.Module):
    """
    Encodes a node's using 'convolutional' GraphSage approach
    """
    def __init__(self, features, feature_dim,
            embed_dim, adj_lists, aggregator,
            num_sample=10,
            base_model=None, gcn=False, cuda=False,
            feature_transform=False):
        super(Encoder, self).__init__()

        self.features = features
        self.feat_dim = feature_dim
        self.adj_lists = adj_lists
        self.aggregator = aggregator
        self.num_sample = num_sample
        if base_model != None:
            self.base_model = base_model

        self.gcn = gcn
        self.embed_dim = embed_dim
        self.cuda = cuda
        self.aggregator.cuda = cuda
        self.weight = nn.Parameter(
                torch.FloatTensor(embed_dim, self.feat_dim if self.gcn else 2 * self.feat_dim))
        init.xavier_uniform(self.weight)

    def forward(self, nodes):
        """
        Generates embeddings for a batch of nodes.

        nodes     -- list of nodes
        mode      -- string desiginating the mode of the nodes
        """
        neigh_feats = self.aggregator.forward(nodes, [self.adj_lists[node] for node in nodes],
                self.num_sample)
        if not self.gcn:
            if self.cuda:
                self_feats = self.features(torch.LongTensor(nodes).cuda())
            else:
                self_feats = self.features(torch.LongTensor(nodes))
            combined = torch.cat([self_feats, neigh_feats], dim=1)
        else:
            combined = neigh_feats
        combined = F.relu(self.weight.mm(combined.t()))
        return combined


class SupervisedGraphSage(nn.Module):

    def __init__(self, num_classes, enc):
        super(SupervisedGraphSage, self).__init__()
        self.enc = enc
        self.xent = nn.CrossEntropyLoss()

        self.weight = nn.Parameter(torch.FloatTensor(num_classes, enc.embed_dim))
        init.xavier_uniform(self.weight)

    def forward(self, nodes):
        embeds = self.enc(nodes)
        scores = self.weight.mm(embeds)
        return scores.t()

    def loss(self, nodes, labels):
        scores = self.forward(nodes)
        return self.xent(scores, labels.squeeze())


def build_graphsage():
    num_nodes, num_feats = 7, 5
    edges = [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (4, 5), (5, 6), (6, 0), (2, 5)]
    adj_lists = defaultdict(set)
    for paper1, paper2 in edges:
        adj_lists[paper1].add(paper2)
        adj_lists[paper2].add(paper1)
    features = nn.Embedding(num_nodes, num_feats)
    features.weight = nn.Parameter(torch.randn(num_nodes, num_feats), requires_grad=False)

    agg1 = MeanAggregator(features, cuda=False)
    enc1 = Encoder(features, num_feats, 6, adj_lists, agg1, gcn=False, cuda=False)
    agg2 = MeanAggregator(lambda nodes : enc1(nodes).t(), cuda=False)
    enc2 = Encoder(lambda nodes : enc1(nodes).t(), enc1.embed_dim, 6, adj_lists, agg2,
            base_model=enc1, gcn=False, cuda=False)
    enc1.num_samples = 5
    enc2.num_samples = 5

    graphsage = SupervisedGraphSage(3, enc2)
    return graphsage


def run_cora():
    random.seed(1)
    graphsage = torch.compile(build_graphsage())
    return graphsage


def make():
    torch.manual_seed(0)
    random.seed(1)
    return build_graphsage(), [([0, 3],)]
