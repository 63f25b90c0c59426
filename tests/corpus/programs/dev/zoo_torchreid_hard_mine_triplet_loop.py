"""torchreid TripletLoss: per anchor, `dist[i][mask[i]].max()` and `dist[i][mask[i] == 0].min()` boolean reads in a Python loop over the batch, after `dist.addmm_(1, -2, ...)`.

Source: KaiyangZhou/deep-person-reid@03d0674dcbf28020dc2cc597137154c0250e8b44:torchreid/losses/hard_mine_triplet_loss.py:8-49
Kept: TripletLoss verbatim except the deprecated positional `addmm_(1, -2, a, b)`
overload, written with the keywords it maps to (`beta=1, alpha=-2`), which
current torch requires.
Simplified: the engine's softmax + triplet combination is reduced to compiling
the criterion, the way a training loop wraps it; batch of 6 features of dim 8.
"""
import torch
import torch.nn as nn


class TripletLoss(nn.Module):
    """Triplet loss with hard positive/negative mining.

    Args:
        margin (float): margin for triplet.
    """

    def __init__(self, margin=0.3):
        super(TripletLoss, self).__init__()
        self.margin = margin
        self.ranking_loss = nn.MarginRankingLoss(margin=margin)

    def forward(self, inputs, targets):
        """
        Args:
            inputs: feature matrix with shape (batch_size, feat_dim)
            targets: ground truth labels with shape (num_classes)
        """
        n = inputs.size(0)

        # Compute pairwise distance, replace by the official when merged
        dist = torch.pow(inputs, 2).sum(dim=1, keepdim=True).expand(n, n)
        dist = dist + dist.t()
        dist.addmm_(inputs, inputs.t(), beta=1, alpha=-2)
        dist = dist.clamp(min=1e-12).sqrt()  # for numerical stability

        # For each anchor, find the hardest positive and negative
        mask = targets.expand(n, n).eq(targets.expand(n, n).t())
        dist_ap, dist_an = [], []
        for i in range(n):
            dist_ap.append(dist[i][mask[i]].max().unsqueeze(0))
            dist_an.append(dist[i][mask[i] == 0].min().unsqueeze(0))
        dist_ap = torch.cat(dist_ap)
        dist_an = torch.cat(dist_an)

        # Compute ranking hinge loss
        y = torch.ones_like(dist_an)
        return self.ranking_loss(dist_an, dist_ap, y)


criterion_t = torch.compile(TripletLoss(margin=0.3))


def make():
    torch.manual_seed(0)
    feats = torch.randn(6, 8)
    pids = torch.tensor([0, 0, 1, 1, 2, 2])
    return TripletLoss(margin=0.3), [(feats, pids)]
