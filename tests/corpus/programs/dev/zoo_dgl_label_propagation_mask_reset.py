"""DGL LabelPropagation: known labels are copied in with `y[mask] = labels[mask]` and re-imposed after each propagation step when `reset` is set.

Source: dmlc/dgl (python/dgl/nn/pytorch/utils.py, the version with JumpingKnowledge and LabelPropagation; index copy id 781600627):python/dgl/nn/pytorch/utils.py:LabelPropagation
Kept: the constructor flags, forward's `with g.local_scope():` block, the
one-hot / multi-label choice on `labels.size()`, the masked initialisation,
in/out degree normalisation with the norm_type switch and its ValueError,
and the k-step loop with clamp / normalize / reset.
Simplified: the DGLGraph is a small dense-adjacency stand-in that provides
local_scope, in_degrees/out_degrees, ndata and update_all(copy_u, sum);
dgl.function is a tiny stand-in namespace. 6 nodes, 3 classes.
"""
import contextlib

import torch as th
import torch.nn.functional as F
from torch import nn


class fn:
    """Stand-in for dgl.function (message/reduce builtins by name)."""

    @staticmethod
    def copy_u(u, out):
        return ("copy_u", u, out)

    @staticmethod
    def sum(msg, out):
        return ("sum", msg, out)


class DenseGraph:
    """Stand-in for a DGLGraph stored as a dense adjacency (src x dst)."""

    def __init__(self, adj):
        self.adj = adj
        self.ndata = {}

    @contextlib.contextmanager
    def local_scope(self):
        saved = dict(self.ndata)
        try:
            yield
        finally:
            self.ndata = saved

    def in_degrees(self):
        return self.adj.sum(dim=0)

    def out_degrees(self):
        return self.adj.sum(dim=1)

    def update_all(self, message_func, reduce_func):
        _, src_field, _ = message_func
        _, _, dst_field = reduce_func
        self.ndata[dst_field] = self.adj.t() @ self.ndata[src_field]


class LabelPropagation(nn.Module):
    def __init__(
        self,
        k,
        alpha,
        norm_type="sym",
        clamp=True,
        normalize=False,
        reset=False,
    ):
        super(LabelPropagation, self).__init__()
        self.k = k
        self.alpha = alpha
        self.norm_type = norm_type
        self.clamp = clamp
        self.normalize = normalize
        self.reset = reset

    def forward(self, g, labels, mask=None):
        with g.local_scope():
            # multi-label / multi-class
            if len(labels.size()) > 1 and labels.size(1) > 1:
                labels = labels.to(th.float32)
            # single-label multi-class
            else:
                labels = F.one_hot(labels.view(-1)).to(th.float32)

            y = labels
            if mask is not None:
                y = th.zeros_like(labels)
                y[mask] = labels[mask]

            init = (1 - self.alpha) * y
            in_degs = g.in_degrees().float().clamp(min=1)
            out_degs = g.out_degrees().float().clamp(min=1)
            if self.norm_type == "sym":
                norm_i = th.pow(in_degs, -0.5).to(labels.device).unsqueeze(1)
                norm_j = th.pow(out_degs, -0.5).to(labels.device).unsqueeze(1)
            elif self.norm_type == "row":
                norm_i = th.pow(in_degs, -1.0).to(labels.device).unsqueeze(1)
            else:
                raise ValueError(
                    f"Expect norm_type to be 'sym' or 'row', got {self.norm_type}"
                )

            for _ in range(self.k):
                g.ndata["h"] = y * norm_j if self.norm_type == "sym" else y
                g.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
                y = init + self.alpha * g.ndata["h"] * norm_i

                if self.clamp:
                    y = y.clamp_(0.0, 1.0)
                if self.normalize:
                    y = F.normalize(y, p=1)
                if self.reset:
                    y[mask] = labels[mask]

            return y


def build() -> LabelPropagation:
    return LabelPropagation(k=3, alpha=0.5, clamp=False, normalize=True, reset=True)


propagate = th.compile(build())


def make():
    th.manual_seed(0)
    adj = (th.rand(6, 6) > 0.5).float()
    g = DenseGraph(adj)
    labels = th.tensor([0, 2, 1, 2, 0, 1])
    mask = th.tensor([0, 1, 1, 1, 0, 0]).bool()
    multi = th.tensor([[1, 0], [0, 1], [1, 1], [0, 0], [1, 0], [0, 1]])
    return build(), [(g, labels, mask), (g, multi, mask)]
