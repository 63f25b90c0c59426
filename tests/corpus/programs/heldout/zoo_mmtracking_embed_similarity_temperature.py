"""MMTracking's quasi-dense track head: embeddings split per image with `torch.split(x, [sizes])`, `embed_similarity` with its empty-input shortcut, method strings and temperature recursion, and get_targets' integer-index matching (no break expected).

Source: open-mmlab/mmtracking@e79491ec8f0b8c86fda947fbaaa824c66ab2a991:mmtrack/core/track/similarity.py:6-33
Also: mmtrack/models/track_heads/quasi_dense_embed_head.py:11-160 (forward, get_targets,
match), mmtrack/models/track_heads/quasi_dense_track_head.py:15-130 (the tail of
forward_train and extract_bbox_feats).
Kept: embed_similarity verbatim; QuasiDenseEmbedHead.forward/get_targets/match
verbatim with the softmax_temp and loss_track_aux plumbing; the tail of
forward_train (embed key/ref features, match, get_targets).
Simplified: the head is its own nn.Module (RoIEmbedHead's conv/fc builder reduced
to its 0-conv, 1-fc case); RoI extraction and sampling are replaced by given
RoI features and small sampling-result objects; the losses are not computed
(the function returns match_feats and asso_targets).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def embed_similarity(key_embeds,
                     ref_embeds,
                     method='dot_product',
                     temperature=-1):
    assert method in ['dot_product', 'cosine']

    if key_embeds.size(0) == 0 or ref_embeds.size(0) == 0:
        return torch.zeros((key_embeds.size(0), ref_embeds.size(0)),
                           device=key_embeds.device)

    if method == 'cosine':
        key_embeds = F.normalize(key_embeds, p=2, dim=1)
        ref_embeds = F.normalize(ref_embeds, p=2, dim=1)
        return torch.mm(key_embeds, ref_embeds.t())
    elif method == 'dot_product':
        if temperature > 0:
            dists = embed_similarity(key_embeds, ref_embeds, method='cosine')
            dists /= temperature
            return dists
        else:
            return torch.mm(key_embeds, ref_embeds.t())


class QuasiDenseEmbedHead(nn.Module):
    def __init__(self, in_channels=4, roi_feat_size=2, fc_out_channels=16,
                 embed_channels=8, softmax_temp=-1, loss_track_aux=True):
        super().__init__()
        self.num_convs = 0
        self.num_fcs = 1
        self.convs = nn.ModuleList()
        self.fcs = nn.ModuleList(
            [nn.Linear(in_channels * roi_feat_size * roi_feat_size, fc_out_channels)])
        self.relu = nn.ReLU(inplace=True)
        self.last_layer_dim = fc_out_channels
        self.fc_embed = nn.Linear(self.last_layer_dim, embed_channels)
        self.softmax_temp = softmax_temp
        self.loss_track_aux = loss_track_aux or None

    def forward(self, x):
        """Forward the input `x`."""

        if self.num_convs > 0:
            for conv in self.convs:
                x = conv(x)
        x = x.flatten(1)
        if self.num_fcs > 0:
            for fc in self.fcs:
                x = self.relu(fc(x))
        x = self.fc_embed(x)
        return x

    def get_targets(self, gt_match_indices, key_sampling_results,
                    ref_sampling_results):
        track_targets = []
        track_weights = []
        for _gt_match_indices, key_res, ref_res in zip(gt_match_indices,
                                                       key_sampling_results,
                                                       ref_sampling_results):
            targets = _gt_match_indices.new_zeros(
                (key_res.pos_bboxes.size(0), ref_res.bboxes.size(0)),
                dtype=torch.int)
            _match_indices = _gt_match_indices[key_res.pos_assigned_gt_inds]
            pos2pos = (_match_indices.view(
                -1, 1) == ref_res.pos_assigned_gt_inds.view(1, -1)).int()
            targets[:, :pos2pos.size(1)] = pos2pos
            weights = (targets.sum(dim=1) > 0).float()
            track_targets.append(targets)
            track_weights.append(weights)
        return track_targets, track_weights

    def match(self, key_embeds, ref_embeds, key_sampling_results,
              ref_sampling_results):
        num_key_rois = [res.pos_bboxes.size(0) for res in key_sampling_results]
        key_embeds = torch.split(key_embeds, num_key_rois)
        num_ref_rois = [res.bboxes.size(0) for res in ref_sampling_results]
        ref_embeds = torch.split(ref_embeds, num_ref_rois)

        dists, cos_dists = [], []
        for key_embed, ref_embed in zip(key_embeds, ref_embeds):
            dist = embed_similarity(
                key_embed,
                ref_embed,
                method='dot_product',
                temperature=self.softmax_temp)
            dists.append(dist)
            if self.loss_track_aux is not None:
                cos_dist = embed_similarity(
                    key_embed, ref_embed, method='cosine')
                cos_dists.append(cos_dist)
            else:
                cos_dists.append(None)
        return dists, cos_dists


class SamplingResult:
    def __init__(self, pos_bboxes, bboxes, pos_assigned_gt_inds):
        self.pos_bboxes = pos_bboxes
        self.bboxes = bboxes
        self.pos_assigned_gt_inds = pos_assigned_gt_inds


def forward_train_tail(embed_head, key_roi_feats, ref_roi_feats,
                       key_sampling_results, ref_sampling_results,
                       gt_match_indices):
    key_feats = embed_head(key_roi_feats)
    ref_feats = embed_head(ref_roi_feats)
    match_feats = embed_head.match(key_feats, ref_feats,
                                   key_sampling_results,
                                   ref_sampling_results)
    asso_targets = embed_head.get_targets(gt_match_indices,
                                          key_sampling_results,
                                          ref_sampling_results)
    return match_feats, asso_targets


track_tail = torch.compile(forward_train_tail)


def make():
    torch.manual_seed(0)
    head = QuasiDenseEmbedHead()
    tempered = QuasiDenseEmbedHead(softmax_temp=0.07, loss_track_aux=False)
    key_res = [SamplingResult(torch.rand(2, 4), torch.rand(3, 4), torch.tensor([0, 1])),
               SamplingResult(torch.rand(1, 4), torch.rand(2, 4), torch.tensor([0]))]
    ref_res = [SamplingResult(torch.rand(2, 4), torch.rand(4, 4), torch.tensor([1, 0])),
               SamplingResult(torch.rand(1, 4), torch.rand(3, 4), torch.tensor([0]))]
    empty_key = [SamplingResult(torch.rand(0, 4), torch.rand(2, 4), torch.zeros(0, dtype=torch.long)),
                 key_res[1]]
    gt_match_indices = [torch.tensor([1, 0]), torch.tensor([0])]
    key_feats = torch.randn(3, 4, 2, 2)
    ref_feats = torch.randn(7, 4, 2, 2)
    return forward_train_tail, [
        (head, key_feats, ref_feats, key_res, ref_res, gt_match_indices),
        (tempered, key_feats, ref_feats, key_res, ref_res, gt_match_indices),
        (head, key_feats[2:], ref_feats, empty_key, ref_res, gt_match_indices),
    ]
