"""fast-reid TripletLoss: hard mining reads `dist_mat[is_pos].contiguous().view(N, -1)`, and with `margin <= 0` the soft-margin loss is checked with `if loss == float('Inf'):` before falling back to a margin ranking loss.

Source: JDAI-CV/fast-reid@16655448c25dfb3e9cbf35e6a1f94d1731bbbf06:fastreid/modeling/losses/triplet_loss.py:14-113
Also: fastreid/modeling/losses/utils.py (normalize, euclidean_dist).
Kept: hard_example_mining, weighted_example_mining, softmax_weights and the
TripletLoss class verbatim, with its cfg plumbing (cfg.MODEL.LOSSES.TRI.*) and
the `comm.get_world_size() > 1` gather branch.
Simplified: comm.get_world_size returns 1 (no distributed run) and
concat_all_gather is the identity; a small cfg namespace; the loss object is
called from a small head module, as fast-reid's Baseline.losses does; 6
features of dim 8 with 3 identities x 2 images.
"""
import torch
import torch.nn.functional as F


class comm:
    @staticmethod
    def get_world_size():
        return 1


def concat_all_gather(tensor):
    return tensor


def normalize(x, axis=-1):
    """Normalizing to unit length along the specified dimension."""
    x = 1. * x / (torch.norm(x, 2, axis, keepdim=True).expand_as(x) + 1e-12)
    return x


def euclidean_dist(x, y):
    m, n = x.size(0), y.size(0)
    xx = torch.pow(x, 2).sum(1, keepdim=True).expand(m, n)
    yy = torch.pow(y, 2).sum(1, keepdim=True).expand(n, m).t()
    dist = xx + yy - 2 * torch.matmul(x, y.t())
    dist = dist.clamp(min=1e-12).sqrt()  # for numerical stability
    return dist


def softmax_weights(dist, mask):
    max_v = torch.max(dist * mask, dim=1, keepdim=True)[0]
    diff = dist - max_v
    Z = torch.sum(torch.exp(diff) * mask, dim=1, keepdim=True) + 1e-6  # avoid division by zero
    W = torch.exp(diff) * mask / Z
    return W


def hard_example_mining(dist_mat, is_pos, is_neg):
    assert len(dist_mat.size()) == 2
    N = dist_mat.size(0)

    dist_ap, relative_p_inds = torch.max(
        dist_mat[is_pos].contiguous().view(N, -1), 1, keepdim=True)
    dist_an, relative_n_inds = torch.min(
        dist_mat[is_neg].contiguous().view(N, -1), 1, keepdim=True)

    # shape [N]
    dist_ap = dist_ap.squeeze(1)
    dist_an = dist_an.squeeze(1)

    return dist_ap, dist_an


def weighted_example_mining(dist_mat, is_pos, is_neg):
    assert len(dist_mat.size()) == 2

    is_pos = is_pos.float()
    is_neg = is_neg.float()
    dist_ap = dist_mat * is_pos
    dist_an = dist_mat * is_neg

    weights_ap = softmax_weights(dist_ap, is_pos)
    weights_an = softmax_weights(-dist_an, is_neg)

    dist_ap = torch.sum(dist_ap * weights_ap, dim=1)
    dist_an = torch.sum(dist_an * weights_an, dim=1)

    return dist_ap, dist_an


class TripletLoss(object):
    def __init__(self, cfg):
        self._margin = cfg.MODEL.LOSSES.TRI.MARGIN
        self._normalize_feature = cfg.MODEL.LOSSES.TRI.NORM_FEAT
        self._scale = cfg.MODEL.LOSSES.TRI.SCALE
        self._hard_mining = cfg.MODEL.LOSSES.TRI.HARD_MINING

    def __call__(self, embedding, targets):
        if self._normalize_feature:
            embedding = normalize(embedding, axis=-1)

        # For distributed training, gather all features from different process.
        if comm.get_world_size() > 1:
            all_embedding = concat_all_gather(embedding)
            all_targets = concat_all_gather(targets)
        else:
            all_embedding = embedding
            all_targets = targets

        dist_mat = euclidean_dist(embedding, all_embedding)

        N, M = dist_mat.size()
        is_pos = targets.view(N, 1).expand(N, M).eq(all_targets.view(M, 1).expand(M, N).t())
        is_neg = targets.view(N, 1).expand(N, M).ne(all_targets.view(M, 1).expand(M, N).t())

        if self._hard_mining:
            dist_ap, dist_an = hard_example_mining(dist_mat, is_pos, is_neg)
        else:
            dist_ap, dist_an = weighted_example_mining(dist_mat, is_pos, is_neg)

        y = dist_an.new().resize_as_(dist_an).fill_(1)

        if self._margin > 0:
            loss = F.margin_ranking_loss(dist_an, dist_ap, y, margin=self._margin)
        else:
            loss = F.soft_margin_loss(dist_an - dist_ap, y)
            if loss == float('Inf'): loss = F.margin_ranking_loss(dist_an, dist_ap, y, margin=0.3)

        return loss * self._scale


class _NS:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def make_cfg(margin, hard_mining, norm_feat=False):
    tri = _NS(MARGIN=margin, NORM_FEAT=norm_feat, SCALE=1.0, HARD_MINING=hard_mining)
    return _NS(MODEL=_NS(LOSSES=_NS(TRI=tri)))


class EmbeddingHead(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.bottleneck = torch.nn.Linear(8, 8)
        self.triplet = TripletLoss(cfg)

    def forward(self, features, targets):
        feat = self.bottleneck(features)
        return self.triplet(feat, targets)


head = torch.compile(EmbeddingHead(make_cfg(0.0, True)))


def make():
    torch.manual_seed(0)
    feats = torch.randn(6, 8)
    pids = torch.tensor([0, 0, 1, 1, 2, 2])
    # huge features overflow soft_margin_loss's exp: the Inf fallback
    return EmbeddingHead(make_cfg(0.0, True)), [(feats, pids), (feats * 1e4, pids)]
