"""SparseInst inference: per image `keep = scores > cls_threshold`, boolean-mask reads, `if scores.size(0) == 0: ... continue`, a `@torch.jit.script` rescoring helper and mask upsampling to the original size.

Source: hustvl/SparseInst@47315cdba50927bf4d0ee53e80e0dfd4fedba64c:sparseinst/sparseinst.py:18-160
Kept: rescoring_mask under @torch.jit.script, SparseInst's normalizer /
preprocess_inputs / forward (eval side) / inference as written, with
detectron2-style Instances and BitMasks results and the config lookups of
cls/mask thresholds.
Simplified: backbone + encoder + decoder are one conv head producing
pred_logits / pred_masks / pred_scores for 4 instance kernels;
ImageList.from_tensors is a stack padded to a multiple of 32; 2 classes;
CLS_THRESHOLD is 0.545 (default 0.005) so that the untrained head keeps
instances for dark images and none for bright ones.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


@torch.jit.script
def rescoring_mask(scores, mask_pred, masks):
    mask_pred_ = mask_pred.float()
    return scores * ((masks * mask_pred_).sum([1, 2]) / (mask_pred_.sum([1, 2]) + 1e-6))


class Instances:
    def __init__(self, image_size, **kwargs):
        self._image_size = image_size
        self._fields = {}
        for k, v in kwargs.items():
            self.set(k, v)

    @property
    def image_size(self):
        return self._image_size

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
        data_len = len(value)
        if len(self._fields):
            assert (
                len(self) == data_len
            ), "Adding a field of length {} to a Instances of length {}".format(data_len, len(self))
        self._fields[name] = value

    def get_fields(self):
        return self._fields

    def __len__(self):
        for v in self._fields.values():
            return v.__len__()
        raise NotImplementedError("Empty Instances does not support __len__!")


class BitMasks:
    def __init__(self, tensor):
        device = tensor.device if isinstance(tensor, torch.Tensor) else torch.device("cpu")
        tensor = torch.as_tensor(tensor, dtype=torch.bool, device=device)
        assert tensor.dim() == 3, tensor.size()
        self.image_size = tensor.shape[1:]
        self.tensor = tensor

    def __len__(self):
        return self.tensor.shape[0]


class ImageList:
    def __init__(self, tensor, image_sizes):
        self.tensor = tensor
        self.image_sizes = image_sizes

    @staticmethod
    def from_tensors(tensors, size_divisibility=0, pad_value=0.0):
        image_sizes = [(int(im.shape[-2]), int(im.shape[-1])) for im in tensors]
        max_h = max(s[0] for s in image_sizes)
        max_w = max(s[1] for s in image_sizes)
        if size_divisibility > 1:
            stride = size_divisibility
            max_h = (max_h + (stride - 1)) // stride * stride
            max_w = (max_w + (stride - 1)) // stride * stride
        batched = [F.pad(im, (0, max_w - im.shape[-1], 0, max_h - im.shape[-2]), value=pad_value) for im in tensors]
        return ImageList(torch.stack(batched), image_sizes)


class _Node(dict):
    __getattr__ = dict.__getitem__


def get_cfg():
    return _Node(
        MODEL=_Node(
            DEVICE="cpu",
            PIXEL_MEAN=[123.675, 116.280, 103.530],
            PIXEL_STD=[58.395, 57.120, 57.375],
            SPARSE_INST=_Node(CLS_THRESHOLD=0.545, MASK_THRESHOLD=0.45, MAX_DETECTIONS=100,
                              NUM_CLASSES=2, NUM_MASKS=4),
        ),
        INPUT=_Node(MASK_FORMAT="bitmask"),
    )


class HeadStandIn(nn.Module):
    """One strided conv + 1x1 heads in place of backbone, encoder and decoder."""

    def __init__(self, num_classes, num_masks, dim=8):
        super().__init__()
        self.stem = nn.Conv2d(3, dim, 3, stride=4, padding=1)
        self.inst_kernels = nn.Conv2d(dim, num_masks, 1)
        self.cls_score = nn.Linear(dim, num_classes)
        self.objectness = nn.Linear(dim, 1)
        self.mask_kernel = nn.Linear(dim, dim)

    def forward(self, images):
        features = F.relu(self.stem(images))
        iam = self.inst_kernels(features).flatten(2).softmax(-1)
        inst_features = torch.bmm(iam, features.flatten(2).transpose(1, 2))
        pred_logits = self.cls_score(inst_features)
        pred_scores = self.objectness(inst_features)
        kernels = self.mask_kernel(inst_features)
        pred_masks = torch.bmm(kernels, features.flatten(2)).view(
            images.shape[0], -1, features.shape[-2], features.shape[-1])
        return {"pred_logits": pred_logits, "pred_masks": pred_masks, "pred_scores": pred_scores}


class SparseInst(nn.Module):

    def __init__(self, cfg):
        super().__init__()

        # move to target device
        self.device = torch.device(cfg.MODEL.DEVICE)

        self.decoder = HeadStandIn(cfg.MODEL.SPARSE_INST.NUM_CLASSES, cfg.MODEL.SPARSE_INST.NUM_MASKS)

        # data and preprocessing
        self.mask_format = cfg.INPUT.MASK_FORMAT

        self.pixel_mean = torch.Tensor(cfg.MODEL.PIXEL_MEAN).to(self.device).view(3, 1, 1)
        self.pixel_std = torch.Tensor(cfg.MODEL.PIXEL_STD).to(self.device).view(3, 1, 1)

        # inference
        self.cls_threshold = cfg.MODEL.SPARSE_INST.CLS_THRESHOLD
        self.mask_threshold = cfg.MODEL.SPARSE_INST.MASK_THRESHOLD
        self.max_detections = cfg.MODEL.SPARSE_INST.MAX_DETECTIONS

    def normalizer(self, image):
        image = (image - self.pixel_mean) / self.pixel_std
        return image

    def preprocess_inputs(self, batched_inputs):
        images = [x["image"].to(self.device) for x in batched_inputs]
        images = [self.normalizer(x) for x in images]
        images = ImageList.from_tensors(images, 32)
        return images

    def forward(self, batched_inputs):
        images = self.preprocess_inputs(batched_inputs)
        max_shape = images.tensor.shape[2:]
        # forward
        output = self.decoder(images.tensor)

        results = self.inference(output, batched_inputs, max_shape, images.image_sizes)
        processed_results = [{"instances": r} for r in results]
        return processed_results

    def inference(self, output, batched_inputs, max_shape, image_sizes):
        # max_detections = self.max_detections
        results = []
        pred_scores = output["pred_logits"].sigmoid()
        pred_masks = output["pred_masks"].sigmoid()
        pred_objectness = output["pred_scores"].sigmoid()
        pred_scores = torch.sqrt(pred_scores * pred_objectness)

        for _, (scores_per_image, mask_pred_per_image, batched_input, img_shape) in enumerate(zip(
                pred_scores, pred_masks, batched_inputs, image_sizes)):

            ori_shape = (batched_input["height"], batched_input["width"])
            result = Instances(ori_shape)
            # max/argmax
            scores, labels = scores_per_image.max(dim=-1)
            # cls threshold
            keep = scores > self.cls_threshold
            scores = scores[keep]
            labels = labels[keep]
            mask_pred_per_image = mask_pred_per_image[keep]

            if scores.size(0) == 0:
                result.scores = scores
                result.pred_classes = labels
                results.append(result)
                continue

            h, w = img_shape
            # rescoring mask using maskness
            scores = rescoring_mask(scores, mask_pred_per_image > self.mask_threshold, mask_pred_per_image)

            mask_pred_per_image = F.interpolate(
                mask_pred_per_image.unsqueeze(1), size=max_shape, mode="bilinear", align_corners=False)[:, :, :h, :w]
            mask_pred_per_image = F.interpolate(
                mask_pred_per_image, size=ori_shape, mode='bilinear', align_corners=False).squeeze(1)

            mask_pred = mask_pred_per_image > self.mask_threshold
            mask_pred = BitMasks(mask_pred)

            # using Detectron2 Instances to store the final results
            result.pred_masks = mask_pred
            result.scores = scores
            result.pred_classes = labels
            results.append(result)

        return results


def build_model(cfg):
    torch.manual_seed(0)
    return SparseInst(cfg).eval()


model = torch.compile(build_model(get_cfg()))


def make():
    torch.manual_seed(0)
    model = build_model(get_cfg())
    dark = torch.zeros(3, 40, 48)
    bright = torch.full((3, 32, 40), 255.0)
    both = [{"image": dark, "height": 80, "width": 96}, {"image": bright, "height": 64, "width": 80}]
    kept = [{"image": dark[:, :32, :32], "height": 64, "width": 64}]
    return model, [(both,), (kept,)]
