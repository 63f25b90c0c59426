"""MOTR inference step: RuntimeTrackerBase.update loops over track slots with `if obj_idxes[i] == -1 and scores[i] >= thresh` / `elif`, bumping a Python id counter, then TrackerPostProcess rescales boxes.

Source: megvii-research/MOTR@3942c0038db8a64495d7fca2d81e193629ae9308:models/motr.py:317-376,474-520 (RuntimeTrackerBase, TrackerPostProcess, the eval side of MOTR._forward_single_image; Instances from models/structures/instances.py)
Kept: RuntimeTrackerBase as written (boolean-mask reset of disappear_time,
the per-slot loop with tensor-element conditions, max_obj_id counter,
miss_tolerance), TrackerPostProcess under no_grad with `torch.Tensor([...])
.to(boxes)` scaling and Instances.remove, and the eval tail of
_forward_single_image (`if self.training` score choice, field writes on a
detectron2-style Instances, `self.track_base.update(track_instances)`).
Simplified: the deformable transformer is replaced by decoder states
passed in; 5 queries, hidden 8, 1 class; no memory bank / QIM.
"""
from typing import Any, Dict, Tuple

import torch
import torch.nn.functional as F
from torch import nn


class Instances:
    def __init__(self, image_size: Tuple[int, int], **kwargs: Any):
        self._image_size = image_size
        self._fields: Dict[str, Any] = {}
        for k, v in kwargs.items():
            self.set(k, v)

    @property
    def image_size(self) -> Tuple[int, int]:
        return self._image_size

    def __setattr__(self, name: str, val: Any) -> None:
        if name.startswith("_"):
            super().__setattr__(name, val)
        else:
            self.set(name, val)

    def __getattr__(self, name: str) -> Any:
        if name == "_fields" or name not in self._fields:
            raise AttributeError("Cannot find field '{}' in the given Instances!".format(name))
        return self._fields[name]

    def set(self, name: str, value: Any) -> None:
        data_len = len(value)
        if len(self._fields):
            assert (
                len(self) == data_len
            ), "Adding a field of length {} to a Instances of length {}".format(data_len, len(self))
        self._fields[name] = value

    def has(self, name: str) -> bool:
        return name in self._fields

    def remove(self, name: str) -> None:
        del self._fields[name]

    def get(self, name: str) -> Any:
        return self._fields[name]

    def get_fields(self) -> Dict[str, Any]:
        return self._fields

    def __len__(self) -> int:
        for v in self._fields.values():
            return v.__len__()
        raise NotImplementedError("Empty Instances does not support __len__!")


def box_cxcywh_to_xyxy(x):
    x_c, y_c, w, h = x.unbind(-1)
    b = [(x_c - 0.5 * w), (y_c - 0.5 * h),
         (x_c + 0.5 * w), (y_c + 0.5 * h)]
    return torch.stack(b, dim=-1)


class RuntimeTrackerBase(object):
    def __init__(self, score_thresh=0.7, filter_score_thresh=0.6, miss_tolerance=5):
        self.score_thresh = score_thresh
        self.filter_score_thresh = filter_score_thresh
        self.miss_tolerance = miss_tolerance
        self.max_obj_id = 0

    def clear(self):
        self.max_obj_id = 0

    def update(self, track_instances: Instances):
        track_instances.disappear_time[track_instances.scores >= self.score_thresh] = 0
        for i in range(len(track_instances)):
            if track_instances.obj_idxes[i] == -1 and track_instances.scores[i] >= self.score_thresh:
                # print("track {} has score {}, assign obj_id {}".format(i, track_instances.scores[i], self.max_obj_id))
                track_instances.obj_idxes[i] = self.max_obj_id
                self.max_obj_id += 1
            elif track_instances.obj_idxes[i] >= 0 and track_instances.scores[i] < self.filter_score_thresh:
                track_instances.disappear_time[i] += 1
                if track_instances.disappear_time[i] >= self.miss_tolerance:
                    # Set the obj_id to -1.
                    # Then this track will be removed by TrackEmbeddingLayer.
                    track_instances.obj_idxes[i] = -1


class TrackerPostProcess(nn.Module):
    """ This module converts the model's output into the format expected by the coco api"""
    def __init__(self):
        super().__init__()

    @torch.no_grad()
    def forward(self, track_instances: Instances, target_size) -> Instances:
        out_logits = track_instances.pred_logits
        out_bbox = track_instances.pred_boxes

        prob = out_logits.sigmoid()
        # prob = out_logits[...,:1].sigmoid()
        scores, labels = prob.max(-1)

        # convert to [x0, y0, x1, y1] format
        boxes = box_cxcywh_to_xyxy(out_bbox)
        # and from relative [0, 1] to absolute [0, height] coordinates
        img_h, img_w = target_size
        scale_fct = torch.Tensor([img_w, img_h, img_w, img_h]).to(boxes)
        boxes = boxes * scale_fct[None, :]

        track_instances.boxes = boxes
        track_instances.scores = scores
        track_instances.labels = labels
        track_instances.remove('pred_logits')
        track_instances.remove('pred_boxes')
        return track_instances


class MLP(nn.Module):
    """ Very simple multi-layer perceptron (also called FFN)"""

    def __init__(self, input_dim, hidden_dim, output_dim, num_layers):
        super().__init__()
        self.num_layers = num_layers
        h = [hidden_dim] * (num_layers - 1)
        self.layers = nn.ModuleList(nn.Linear(n, k) for n, k in zip([input_dim] + h, h + [output_dim]))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = F.relu(layer(x)) if i < self.num_layers - 1 else layer(x)
        return x


class MOTRStep(nn.Module):
    def __init__(self, hidden_dim=8, num_classes=1, num_queries=5):
        super().__init__()
        self.num_classes = num_classes
        self.num_queries = num_queries
        self.class_embed = nn.Linear(hidden_dim, num_classes)
        self.bbox_embed = MLP(hidden_dim, hidden_dim, 4, 3)
        self.post_process = TrackerPostProcess()
        self.track_base = RuntimeTrackerBase()

    def forward(self, hs, track_instances: Instances, ori_img_size):
        outputs_class = self.class_embed(hs)
        outputs_coord = self.bbox_embed(hs).sigmoid()

        with torch.no_grad():
            if self.training:
                track_scores = outputs_class[-1, 0, :].sigmoid().max(dim=-1).values
            else:
                track_scores = outputs_class[-1, 0, :, 0].sigmoid()

        track_instances.scores = track_scores
        track_instances.pred_logits = outputs_class[-1, 0]
        track_instances.pred_boxes = outputs_coord[-1, 0]
        track_instances.output_embedding = hs[-1, 0]
        # each track will be assigned an unique global id by the track base.
        self.track_base.update(track_instances)
        track_instances = self.post_process(track_instances, ori_img_size)
        return track_instances.boxes, track_instances.obj_idxes, track_instances.disappear_time


step = torch.compile(MOTRStep().eval())


def _tracks(obj_idxes, disappear_time):
    n = len(obj_idxes)
    track_instances = Instances((1, 1))
    track_instances.obj_idxes = torch.tensor(obj_idxes, dtype=torch.long)
    track_instances.disappear_time = torch.tensor(disappear_time, dtype=torch.long)
    track_instances.scores = torch.zeros(n)
    return track_instances



def make():
    torch.manual_seed(0)
    model = MOTRStep().eval()
    with torch.no_grad():
        model.class_embed.weight.zero_()
        model.class_embed.bias.zero_()
    hs = torch.zeros(2, 1, 5, 8)
    # class logits come from hs[..., 0] through a unit weight: per-slot scores.
    with torch.no_grad():
        model.class_embed.weight[0, 0] = 1.0
    hs[-1, 0, :, 0] = torch.tensor([3.0, -3.0, 3.0, -3.0, 0.0])
    # slot 0 new (assigned), slot 1 tracked low score past tolerance, slot 2 tracked high,
    # slot 3 tracked low under tolerance, slot 4 new but low score.
    tracks = _tracks([-1, 2, 0, 1, -1], [0, 4, 3, 0, 0])
    fresh = _tracks([-1, -1, -1, -1, -1], [0, 0, 0, 0, 0])
    return model, [(hs, tracks, (48, 64)), (hs, fresh, (48, 64))]
