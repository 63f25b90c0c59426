"""DINO (IDEA-Research) contrastive denoising queries: `int(max(known_num))` over per-target sums, `torch.nonzero` indices, `torch.tensor(range(len(boxes)))`, and a Python loop filling the attention mask, called from the detector's forward when `self.dn_number > 0 or targets is not None`.

Source: IDEA-Research/DINO@faa8520fe9604c23ad65a48bc583550a44c0e3ab:models/dino/dn_components.py:20-137 (called from models/dino/dino.py:261-291; inverse_sigmoid from util/misc.py:575-579)
Kept: prepare_for_cdn as written (training and inference sides, label
noise, box noise, padding, map_known_indice, attn_mask loop, dn_meta),
and the DINO.forward block that calls it with `self.training` and the
config attributes, then heads over the decoder output.
Simplified: every `.cuda()` / `.to('cuda')` is `.to(device)` of the
labels (CPU); the backbone and deformable transformer are replaced by a
learnable query embedding and one linear layer that consume
input_query_label/input_query_bbox and attn_mask; no dn_post_process; hidden
dim 16, 5 queries, 3 classes.
"""
import torch
import torch.nn.functional as F
from torch import nn


def inverse_sigmoid(x, eps=1e-3):
    x = x.clamp(min=0, max=1)
    x1 = x.clamp(min=eps)
    x2 = (1 - x).clamp(min=eps)
    return torch.log(x1/x2)


def prepare_for_cdn(dn_args, training, num_queries, num_classes, hidden_dim, label_enc):
    """
        A major difference of DINO from DN-DETR is that the author process pattern embedding pattern embedding in its detector
        forward function and use learnable tgt embedding, so we change this function a little bit.
        """
    if training:
        targets, dn_number, label_noise_ratio, box_noise_scale = dn_args
        device = targets[0]['labels'].device
        # positive and negative dn queries
        dn_number = dn_number * 2
        known = [(torch.ones_like(t['labels'])).to(device) for t in targets]
        batch_size = len(known)
        known_num = [sum(k) for k in known]
        if int(max(known_num)) == 0:
            dn_number = 1
        else:
            if dn_number >= 100:
                dn_number = dn_number // (int(max(known_num) * 2))
            elif dn_number < 1:
                dn_number = 1
        if dn_number == 0:
            dn_number = 1
        unmask_bbox = unmask_label = torch.cat(known)
        labels = torch.cat([t['labels'] for t in targets])
        boxes = torch.cat([t['boxes'] for t in targets])
        batch_idx = torch.cat([torch.full_like(t['labels'].long(), i) for i, t in enumerate(targets)])

        known_indice = torch.nonzero(unmask_label + unmask_bbox)
        known_indice = known_indice.view(-1)

        known_indice = known_indice.repeat(2 * dn_number, 1).view(-1)
        known_labels = labels.repeat(2 * dn_number, 1).view(-1)
        known_bid = batch_idx.repeat(2 * dn_number, 1).view(-1)
        known_bboxs = boxes.repeat(2 * dn_number, 1)
        known_labels_expaned = known_labels.clone()
        known_bbox_expand = known_bboxs.clone()

        if label_noise_ratio > 0:
            p = torch.rand_like(known_labels_expaned.float())
            chosen_indice = torch.nonzero(p < (label_noise_ratio * 0.5)).view(-1)  # half of bbox prob
            new_label = torch.randint_like(chosen_indice, 0, num_classes)  # randomly put a new one here
            known_labels_expaned.scatter_(0, chosen_indice, new_label)
        single_pad = int(max(known_num))

        pad_size = int(single_pad * 2 * dn_number)
        positive_idx = torch.tensor(range(len(boxes))).long().to(device).unsqueeze(0).repeat(dn_number, 1)
        positive_idx += (torch.tensor(range(dn_number)) * len(boxes) * 2).long().to(device).unsqueeze(1)
        positive_idx = positive_idx.flatten()
        negative_idx = positive_idx + len(boxes)
        if box_noise_scale > 0:
            known_bbox_ = torch.zeros_like(known_bboxs)
            known_bbox_[:, :2] = known_bboxs[:, :2] - known_bboxs[:, 2:] / 2
            known_bbox_[:, 2:] = known_bboxs[:, :2] + known_bboxs[:, 2:] / 2

            diff = torch.zeros_like(known_bboxs)
            diff[:, :2] = known_bboxs[:, 2:] / 2
            diff[:, 2:] = known_bboxs[:, 2:] / 2

            rand_sign = torch.randint_like(known_bboxs, low=0, high=2, dtype=torch.float32) * 2.0 - 1.0
            rand_part = torch.rand_like(known_bboxs)
            rand_part[negative_idx] += 1.0
            rand_part *= rand_sign
            known_bbox_ = known_bbox_ + torch.mul(rand_part,
                                                  diff).to(device) * box_noise_scale
            known_bbox_ = known_bbox_.clamp(min=0.0, max=1.0)
            known_bbox_expand[:, :2] = (known_bbox_[:, :2] + known_bbox_[:, 2:]) / 2
            known_bbox_expand[:, 2:] = known_bbox_[:, 2:] - known_bbox_[:, :2]

        m = known_labels_expaned.long().to(device)
        input_label_embed = label_enc(m)
        input_bbox_embed = inverse_sigmoid(known_bbox_expand)

        padding_label = torch.zeros(pad_size, hidden_dim).to(device)
        padding_bbox = torch.zeros(pad_size, 4).to(device)

        input_query_label = padding_label.repeat(batch_size, 1, 1)
        input_query_bbox = padding_bbox.repeat(batch_size, 1, 1)

        map_known_indice = torch.tensor([]).to(device)
        if len(known_num):
            map_known_indice = torch.cat([torch.tensor(range(num)) for num in known_num])  # [1,2, 1,2,3]
            map_known_indice = torch.cat([map_known_indice + single_pad * i for i in range(2 * dn_number)]).long()
        if len(known_bid):
            input_query_label[(known_bid.long(), map_known_indice)] = input_label_embed
            input_query_bbox[(known_bid.long(), map_known_indice)] = input_bbox_embed

        tgt_size = pad_size + num_queries
        attn_mask = torch.ones(tgt_size, tgt_size).to(device) < 0
        # match query cannot see the reconstruct
        attn_mask[pad_size:, :pad_size] = True
        # reconstruct cannot see each other
        for i in range(dn_number):
            if i == 0:
                attn_mask[single_pad * 2 * i:single_pad * 2 * (i + 1), single_pad * 2 * (i + 1):pad_size] = True
            if i == dn_number - 1:
                attn_mask[single_pad * 2 * i:single_pad * 2 * (i + 1), :single_pad * i * 2] = True
            else:
                attn_mask[single_pad * 2 * i:single_pad * 2 * (i + 1), single_pad * 2 * (i + 1):pad_size] = True
                attn_mask[single_pad * 2 * i:single_pad * 2 * (i + 1), :single_pad * 2 * i] = True

        dn_meta = {
            'pad_size': pad_size,
            'num_dn_group': dn_number,
        }
    else:

        input_query_label = None
        input_query_bbox = None
        attn_mask = None
        dn_meta = None

    return input_query_label, input_query_bbox, attn_mask, dn_meta


class TinyDecoder(nn.Module):
    """Stand-in for DINO's deformable transformer: queries attend under attn_mask."""

    def __init__(self, num_queries, hidden_dim):
        super().__init__()
        self.tgt_embed = nn.Embedding(num_queries, hidden_dim)
        self.refpoint_embed = nn.Embedding(num_queries, 4)
        self.proj = nn.Linear(hidden_dim, hidden_dim)

    def forward(self, src, input_query_bbox, input_query_label, attn_mask):
        bs = src.shape[0]
        tgt = self.tgt_embed.weight[None].repeat(bs, 1, 1)
        refpoint = self.refpoint_embed.weight[None].repeat(bs, 1, 1)
        if input_query_label is not None:
            tgt = torch.cat([input_query_label, tgt], 1)
            refpoint = torch.cat([input_query_bbox, refpoint], 1)
        memory = src.flatten(2).transpose(1, 2)
        attn = tgt @ memory.transpose(1, 2)
        hs = self.proj(tgt + attn.softmax(-1) @ memory)
        if attn_mask is not None:
            hs = hs + (~attn_mask).float().mean(-1)[None, :, None]
        return hs[None], refpoint.sigmoid()[None]


class DINO(nn.Module):
    def __init__(self, num_classes=3, num_queries=5, hidden_dim=16, dn_number=100,
                 dn_label_noise_ratio=0.5, dn_box_noise_scale=0.4, dn_labelbook_size=4):
        super().__init__()
        self.num_queries = num_queries
        self.num_classes = num_classes
        self.hidden_dim = hidden_dim
        self.label_enc = nn.Embedding(dn_labelbook_size + 1, hidden_dim)
        self.dn_number = dn_number
        self.dn_label_noise_ratio = dn_label_noise_ratio
        self.dn_box_noise_scale = dn_box_noise_scale
        self.input_proj = nn.Conv2d(3, hidden_dim, kernel_size=4, stride=4)
        self.transformer = TinyDecoder(num_queries, hidden_dim)
        self.class_embed = nn.ModuleList([nn.Linear(hidden_dim, num_classes)])
        self.bbox_embed = nn.ModuleList([nn.Linear(hidden_dim, 4)])

    def forward(self, samples, targets=None):
        src = self.input_proj(samples)

        if self.dn_number > 0 or targets is not None:
            input_query_label, input_query_bbox, attn_mask, dn_meta =\
                prepare_for_cdn(dn_args=(targets, self.dn_number, self.dn_label_noise_ratio, self.dn_box_noise_scale),
                                training=self.training,num_queries=self.num_queries,num_classes=self.num_classes,
                                hidden_dim=self.hidden_dim,label_enc=self.label_enc)
        else:
            assert targets is None
            input_query_bbox = input_query_label = attn_mask = dn_meta = None

        hs, reference = self.transformer(src, input_query_bbox, input_query_label, attn_mask)
        # In case num object=0
        hs[0] += self.label_enc.weight[0,0]*0.0

        outputs_coord_list = []
        for dec_lid, (layer_ref_sig, layer_bbox_embed, layer_hs) in enumerate(zip(reference, self.bbox_embed, hs)):
            layer_delta_unsig = layer_bbox_embed(layer_hs)
            layer_outputs_unsig = layer_delta_unsig  + inverse_sigmoid(layer_ref_sig)
            layer_outputs_unsig = layer_outputs_unsig.sigmoid()
            outputs_coord_list.append(layer_outputs_unsig)
        outputs_coord_list = torch.stack(outputs_coord_list)

        outputs_class = torch.stack([layer_cls_embed(layer_hs) for
                                     layer_cls_embed, layer_hs in zip(self.class_embed, hs)])
        out = {'pred_logits': outputs_class[-1], 'pred_boxes': outputs_coord_list[-1]}
        return out, dn_meta


def train(model, samples, targets):
    model.train()
    compiled = torch.compile(model)
    return compiled(samples, targets)


def make():
    torch.manual_seed(0)
    samples = torch.randn(2, 3, 16, 16)
    targets = [
        {'labels': torch.tensor([1, 2]), 'boxes': torch.tensor([[0.3, 0.3, 0.2, 0.2], [0.6, 0.5, 0.3, 0.4]])},
        {'labels': torch.tensor([0]), 'boxes': torch.tensor([[0.5, 0.5, 0.4, 0.3]])},
    ]
    empty = [{'labels': torch.zeros(0, dtype=torch.int64), 'boxes': torch.zeros(0, 4)} for _ in range(2)]
    return DINO().train(), [(samples, targets), (samples, empty)]
