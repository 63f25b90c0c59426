"""D-FINE contrastive denoising queries (training only): ground-truth counts from `len()` of each target, `max()` over them, `torch.nonzero` of the positive mask split by those counts, noisy labels and boxes, a block attention mask.

Source: huggingface/transformers@v5.23.0:src/transformers/models/d_fine/modeling_d_fine.py:1086-1090,1412-1520,1765-1830
(the census lists DFineModel with breaks in eval and more in train; a tiny
v5.23 DFineModel run under Dynamo in training logs the `torch.nonzero` of
get_contrastive_denoising_training_group at line 1487).
Kept: get_contrastive_denoising_training_group verbatim (early returns,
padding of the targets in a Python loop, tiling into positive/negative
groups, `torch.nonzero(positive_gt_mask)[:, 1]` split by the per-image
counts, label noise with randint_like, box noise in corner format, the
denoising attention mask built in a loop), inverse_sigmoid, the box format
helpers, and DFineModel.forward's `if self.training and num_denoising > 0 and
labels is not None` call and the concatenation of denoising queries in
front of the top-k encoder queries.
Simplified: the backbone/encoder is a linear over flattened features, no
anchors; the decoder is one linear over the queries; num_denoising 8.
"""
import torch
import torch.nn.functional as F
from torch import nn


class DFineConfig:
    d_model = 8
    num_labels = 5
    num_queries = 4
    num_denoising = 8
    label_noise_ratio = 0.5
    box_noise_scale = 1.0
    learn_initial_query = False


def inverse_sigmoid(x, eps=1e-5):
    x = x.clamp(min=0, max=1)
    x1 = x.clamp(min=eps)
    x2 = (1 - x).clamp(min=eps)
    return torch.log(x1 / x2)


def center_to_corners_format(bboxes_center):
    center_x, center_y, width, height = bboxes_center.unbind(-1)
    bbox_corners = torch.stack(
        # top left x, top left y, bottom right x, bottom right y
        [(center_x - 0.5 * width), (center_y - 0.5 * height), (center_x + 0.5 * width), (center_y + 0.5 * height)],
        dim=-1,
    )
    return bbox_corners


def corners_to_center_format(bboxes_corners):
    top_left_x, top_left_y, bottom_right_x, bottom_right_y = bboxes_corners.unbind(-1)
    b = [
        (top_left_x + bottom_right_x) / 2,  # center x
        (top_left_y + bottom_right_y) / 2,  # center y
        (bottom_right_x - top_left_x),  # width
        (bottom_right_y - top_left_y),  # height
    ]
    return torch.stack(b, dim=-1)


def get_contrastive_denoising_training_group(
    targets,
    num_classes,
    num_queries,
    class_embed,
    num_denoising_queries=100,
    label_noise_ratio=0.5,
    box_noise_scale=1.0,
):
    if num_denoising_queries <= 0:
        return None, None, None, None
    num_ground_truths = [len(t["class_labels"]) for t in targets]
    device = targets[0]["class_labels"].device
    max_gt_num = max(num_ground_truths)
    if max_gt_num == 0:
        return None, None, None, None
    num_groups_denoising_queries = num_denoising_queries // max_gt_num
    num_groups_denoising_queries = 1 if num_groups_denoising_queries == 0 else num_groups_denoising_queries
    # pad gt to max_num of a batch
    batch_size = len(num_ground_truths)
    input_query_class = torch.full([batch_size, max_gt_num], num_classes, dtype=torch.int32, device=device)
    input_query_bbox = torch.zeros([batch_size, max_gt_num, 4], device=device)
    pad_gt_mask = torch.zeros([batch_size, max_gt_num], dtype=torch.bool, device=device)
    for i in range(batch_size):
        num_gt = num_ground_truths[i]
        if num_gt > 0:
            input_query_class[i, :num_gt] = targets[i]["class_labels"]
            input_query_bbox[i, :num_gt] = targets[i]["boxes"]
            pad_gt_mask[i, :num_gt] = 1
    # each group has positive and negative queries.
    input_query_class = input_query_class.tile([1, 2 * num_groups_denoising_queries])
    input_query_bbox = input_query_bbox.tile([1, 2 * num_groups_denoising_queries, 1])
    pad_gt_mask = pad_gt_mask.tile([1, 2 * num_groups_denoising_queries])
    # positive and negative mask
    negative_gt_mask = torch.zeros([batch_size, max_gt_num * 2, 1], device=device)
    negative_gt_mask[:, max_gt_num:] = 1
    negative_gt_mask = negative_gt_mask.tile([1, num_groups_denoising_queries, 1])
    positive_gt_mask = 1 - negative_gt_mask
    # contrastive denoising training positive index
    positive_gt_mask = positive_gt_mask.squeeze(-1) * pad_gt_mask
    denoise_positive_idx = torch.nonzero(positive_gt_mask)[:, 1]
    denoise_positive_idx = torch.split(
        denoise_positive_idx, [n * num_groups_denoising_queries for n in num_ground_truths]
    )
    # total denoising queries
    num_denoising_queries = int(max_gt_num * 2 * num_groups_denoising_queries)
    if label_noise_ratio > 0:
        mask = torch.rand_like(input_query_class, dtype=torch.float) < (label_noise_ratio * 0.5)
        # randomly put a new one here
        new_label = torch.randint_like(mask, 0, num_classes, dtype=input_query_class.dtype)
        input_query_class = torch.where(mask & pad_gt_mask, new_label, input_query_class)
    if box_noise_scale > 0:
        known_bbox = center_to_corners_format(input_query_bbox)
        diff = torch.tile(input_query_bbox[..., 2:] * 0.5, [1, 1, 2]) * box_noise_scale
        rand_sign = torch.randint_like(input_query_bbox, 0, 2) * 2.0 - 1.0
        rand_part = torch.rand_like(input_query_bbox)
        rand_part = (rand_part + 1.0) * negative_gt_mask + rand_part * (1 - negative_gt_mask)
        rand_part *= rand_sign
        known_bbox += rand_part * diff
        known_bbox.clip_(min=0.0, max=1.0)
        input_query_bbox = corners_to_center_format(known_bbox)
        input_query_bbox = inverse_sigmoid(input_query_bbox)
    input_query_class = class_embed(input_query_class)
    target_size = num_denoising_queries + num_queries
    attn_mask = torch.full([target_size, target_size], 0, dtype=torch.float, device=device)
    # match query cannot see the reconstruction
    attn_mask[num_denoising_queries:, :num_denoising_queries] = -torch.inf
    # reconstructions cannot see each other
    for i in range(num_groups_denoising_queries):
        idx_block_start = max_gt_num * 2 * i
        idx_block_end = max_gt_num * 2 * (i + 1)
        attn_mask[idx_block_start:idx_block_end, :idx_block_start] = -torch.inf
        attn_mask[idx_block_start:idx_block_end, idx_block_end:num_denoising_queries] = -torch.inf
    denoising_meta_values = {
        "dn_positive_idx": denoise_positive_idx,
        "dn_num_group": num_groups_denoising_queries,
        "dn_num_split": [num_denoising_queries, num_queries],
    }
    return input_query_class, input_query_bbox, attn_mask, denoising_meta_values


class DFineModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.enc_output = nn.Linear(config.d_model, config.d_model)
        self.enc_score_head = nn.Linear(config.d_model, config.num_labels)
        self.enc_bbox_head = nn.Linear(config.d_model, 4)
        self.denoising_class_embed = nn.Embedding(config.num_labels + 1, config.d_model, padding_idx=config.num_labels)
        self.decoder = nn.Linear(config.d_model, config.d_model)

    def forward(self, source_flatten, labels=None):
        # prepare denoising training
        if self.training and self.config.num_denoising > 0 and labels is not None:
            (
                denoising_class,
                denoising_bbox_unact,
                attention_mask,
                denoising_meta_values,
            ) = get_contrastive_denoising_training_group(
                targets=labels,
                num_classes=self.config.num_labels,
                num_queries=self.config.num_queries,
                class_embed=self.denoising_class_embed,
                num_denoising_queries=self.config.num_denoising,
                label_noise_ratio=self.config.label_noise_ratio,
                box_noise_scale=self.config.box_noise_scale,
            )
        else:
            denoising_class, denoising_bbox_unact, attention_mask, denoising_meta_values = None, None, None, None

        output_memory = self.enc_output(source_flatten)

        enc_outputs_class = self.enc_score_head(output_memory)
        enc_outputs_coord_logits = self.enc_bbox_head(output_memory)

        _, topk_ind = torch.topk(enc_outputs_class.max(-1).values, self.config.num_queries, dim=1)

        reference_points_unact = enc_outputs_coord_logits.gather(
            dim=1, index=topk_ind.unsqueeze(-1).repeat(1, 1, enc_outputs_coord_logits.shape[-1])
        )

        if denoising_bbox_unact is not None:
            reference_points_unact = torch.concat([denoising_bbox_unact, reference_points_unact], 1)

        target = output_memory.gather(dim=1, index=topk_ind.unsqueeze(-1).repeat(1, 1, output_memory.shape[-1]))
        target = target.detach()

        if denoising_class is not None:
            target = torch.concat([denoising_class, target], 1)

        init_reference_points = reference_points_unact.detach()

        hidden_states = self.decoder(target)
        if attention_mask is not None:
            hidden_states = torch.softmax(attention_mask, dim=-1) @ hidden_states
        return hidden_states, F.sigmoid(init_reference_points), denoising_meta_values


def train(model, batches, optimizer):
    compiled = torch.compile(model.train())
    for features, labels in batches:
        hidden_states, boxes, _ = compiled(features, labels)
        loss = hidden_states.pow(2).mean() + boxes.mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def make():
    torch.manual_seed(0)
    features = torch.randn(2, 10, 8)
    labels = [
        {"class_labels": torch.tensor([1, 3]), "boxes": torch.tensor([[0.5, 0.5, 0.2, 0.2], [0.3, 0.6, 0.1, 0.3]])},
        {"class_labels": torch.tensor([2]), "boxes": torch.tensor([[0.4, 0.4, 0.3, 0.2]])},
    ]
    empty = [{"class_labels": torch.zeros(0, dtype=torch.long), "boxes": torch.zeros(0, 4)}]
    return DFineModel(DFineConfig()).train(), [(features, labels), (features[:1], empty), (features,)]
