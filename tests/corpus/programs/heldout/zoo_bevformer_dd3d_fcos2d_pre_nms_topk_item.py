"""DD3D (BEVFormer's dd3d plugin) FCOS2D inference: boolean-mask reads, `candidate_mask_per_im.nonzero()` and an `if ... .sum().item() > pre_nms_topk_per_im.item():` top-k guard inside a plain inference object reached through `self.fcos2d_inference(...)`.

Source: fundamentalvision/BEVFormer@66b65f3a1f58caf0507cb2a971b9c0e7f842376c:projects/mmdet3d_plugin/dd3d/modeling/fcos2d.py:257-361
Kept: FCOS2DInference.__init__ (yacs-style cfg.DD3D.FCOS2D.INFERENCE lookups), __call__ and
forward_for_single_feature_map verbatim, including the cached extra_info dict.
Simplified: detectron2's Instances/Boxes are two tiny attribute holders; the caller is a
small module standing in for NuscenesDD3D's inference step; 3 classes, 2 levels of 3x4
and 2x2 locations, PRE_NMS_TOPK 4.
"""
import torch
from torch import nn


class _Node:
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)


def get_cfg():
    inference = _Node(THRESH_WITH_CTR=False, PRE_NMS_THRESH=0.3, PRE_NMS_TOPK=4,
                      POST_NMS_TOPK=10, NMS_THRESH=0.75)
    return _Node(DD3D=_Node(NUM_CLASSES=3, FCOS2D=_Node(INFERENCE=inference)))


class Boxes:
    def __init__(self, tensor):
        self.tensor = tensor

    def __len__(self) -> int:
        return self.tensor.shape[0]


class Instances:
    def __init__(self, image_size, **kwargs):
        self._image_size = image_size
        self._fields = {}
        for k, v in kwargs.items():
            self.set(k, v)

    def __setattr__(self, name, val):
        if name.startswith("_"):
            super().__setattr__(name, val)
        else:
            self.set(name, val)

    def __getattr__(self, name):
        if name == "_fields" or name not in self._fields:
            raise AttributeError("Cannot find field '{}' in the given Instances!".format(name))
        return self._fields[name]

    def set(self, name, value):
        self._fields[name] = value

    def get(self, name):
        return self._fields[name]

    def __len__(self):
        for v in self._fields.values():
            return v.__len__()
        raise NotImplementedError("Empty Instances does not support __len__!")


class FCOS2DInference():
    def __init__(self, cfg):
        self.thresh_with_ctr = cfg.DD3D.FCOS2D.INFERENCE.THRESH_WITH_CTR
        self.pre_nms_thresh = cfg.DD3D.FCOS2D.INFERENCE.PRE_NMS_THRESH
        self.pre_nms_topk = cfg.DD3D.FCOS2D.INFERENCE.PRE_NMS_TOPK
        self.post_nms_topk = cfg.DD3D.FCOS2D.INFERENCE.POST_NMS_TOPK
        self.nms_thresh = cfg.DD3D.FCOS2D.INFERENCE.NMS_THRESH
        self.num_classes = cfg.DD3D.NUM_CLASSES

    def __call__(self, logits, box2d_reg, centerness, locations, image_sizes):

        pred_instances = []  # List[List[Instances]], shape = (L, B)
        extra_info = []
        for lvl, (logits_lvl, box2d_reg_lvl, centerness_lvl, locations_lvl) in \
            enumerate(zip(logits, box2d_reg, centerness, locations)):

            instances_per_lvl, extra_info_per_lvl = self.forward_for_single_feature_map(
                logits_lvl, box2d_reg_lvl, centerness_lvl, locations_lvl, image_sizes
            )  # List of Instances; one for each image.

            for instances_per_im in instances_per_lvl:
                instances_per_im.fpn_levels = locations_lvl.new_ones(len(instances_per_im), dtype=torch.long) * lvl

            pred_instances.append(instances_per_lvl)
            extra_info.append(extra_info_per_lvl)

        return pred_instances, extra_info

    def forward_for_single_feature_map(self, logits, box2d_reg, centerness, locations, image_sizes):
        N, C, _, __ = logits.shape

        # put in the same format as locations
        scores = logits.permute(0, 2, 3, 1).reshape(N, -1, C).sigmoid()
        box2d_reg = box2d_reg.permute(0, 2, 3, 1).reshape(N, -1, 4)
        centerness = centerness.permute(0, 2, 3, 1).reshape(N, -1).sigmoid()

        # if self.thresh_with_ctr is True, we multiply the classification
        # scores with centerness scores before applying the threshold.
        if self.thresh_with_ctr:
            scores = scores * centerness[:, :, None]

        candidate_mask = scores > self.pre_nms_thresh

        pre_nms_topk = candidate_mask.reshape(N, -1).sum(1)
        pre_nms_topk = pre_nms_topk.clamp(max=self.pre_nms_topk)

        if not self.thresh_with_ctr:
            scores = scores * centerness[:, :, None]

        results = []
        all_fg_inds_per_im, all_topk_indices, all_class_inds_per_im = [], [], []
        for i in range(N):
            scores_per_im = scores[i]
            candidate_mask_per_im = candidate_mask[i]
            scores_per_im = scores_per_im[candidate_mask_per_im]

            candidate_inds_per_im = candidate_mask_per_im.nonzero(as_tuple=False)
            fg_inds_per_im = candidate_inds_per_im[:, 0]
            class_inds_per_im = candidate_inds_per_im[:, 1]

            # Cache info here.
            all_fg_inds_per_im.append(fg_inds_per_im)
            all_class_inds_per_im.append(class_inds_per_im)

            box2d_reg_per_im = box2d_reg[i][fg_inds_per_im]
            locations_per_im = locations[fg_inds_per_im]

            pre_nms_topk_per_im = pre_nms_topk[i]

            if candidate_mask_per_im.sum().item() > pre_nms_topk_per_im.item():
                scores_per_im, topk_indices = \
                    scores_per_im.topk(pre_nms_topk_per_im, sorted=False)

                class_inds_per_im = class_inds_per_im[topk_indices]
                box2d_reg_per_im = box2d_reg_per_im[topk_indices]
                locations_per_im = locations_per_im[topk_indices]
            else:
                topk_indices = None

            all_topk_indices.append(topk_indices)

            detections = torch.stack([
                locations_per_im[:, 0] - box2d_reg_per_im[:, 0],
                locations_per_im[:, 1] - box2d_reg_per_im[:, 1],
                locations_per_im[:, 0] + box2d_reg_per_im[:, 2],
                locations_per_im[:, 1] + box2d_reg_per_im[:, 3],
            ],
                                     dim=1)

            instances = Instances(image_sizes[i])
            instances.pred_boxes = Boxes(detections)
            instances.scores = torch.sqrt(scores_per_im)
            instances.pred_classes = class_inds_per_im
            instances.locations = locations_per_im

            results.append(instances)

        extra_info = {
            "fg_inds_per_im": all_fg_inds_per_im,
            "class_inds_per_im": all_class_inds_per_im,
            "topk_indices": all_topk_indices
        }
        return results, extra_info


class DD3DPostProcess(nn.Module):
    """The inference step of NuscenesDD3D.forward (no 3D head, no NMS)."""

    def __init__(self, cfg):
        super().__init__()
        self.fcos2d_inference = FCOS2DInference(cfg)

    def forward(self, logits, box2d_reg, centerness, locations, image_sizes):
        pred_instances, fcos2d_info = self.fcos2d_inference(
            logits, box2d_reg, centerness, locations, image_sizes)
        out = []
        for instances_per_lvl in pred_instances:
            for x in instances_per_lvl:
                out.append((x.pred_boxes.tensor, x.scores, x.pred_classes, x.fpn_levels))
        return out


postprocess = torch.compile(DD3DPostProcess(get_cfg()))


def make():
    torch.manual_seed(0)
    shapes = [(3, 4), (2, 2)]
    locations = []
    for h, w in shapes:
        ys, xs = torch.meshgrid(torch.arange(h, dtype=torch.float32),
                                torch.arange(w, dtype=torch.float32), indexing="ij")
        locations.append(torch.stack([xs.reshape(-1), ys.reshape(-1)], dim=1) * 8 + 4)
    box2d_reg = [torch.rand(1, 4, h, w) * 4 for h, w in shapes]
    centerness = [torch.full((1, 1, h, w), 3.0) for h, w in shapes]
    image_sizes = [(24, 32)]
    many = [torch.randn(1, 3, h, w) for h, w in shapes]
    few = [torch.full((1, 3, h, w), -5.0) for h, w in shapes]
    few[0][0, 1, 0, 1] = 2.0
    few[1][0, 2, 1, 0] = 2.0
    return DD3DPostProcess(get_cfg()), [
        (many, box2d_reg, centerness, locations, image_sizes),
        (few, box2d_reg, centerness, locations, image_sizes),
    ]
