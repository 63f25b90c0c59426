"""pytorch-3dunet MeanIoU evaluation metric: a Python loop over `zip(input, target, strict=True)` and channels, `_jaccard_index` returning 0-d tensors, then `torch.tensor(per_channel_iou)` / `torch.tensor(per_batch_iou)` over lists of tensors; `argmax` when the target is 4D.

Source: wolny/pytorch-3dunet@a33e2c7038a0b51296ca4f99b0f0ed4b61740705:pytorch3dunet/unet3d/metrics.py:30-98
Also: metrics.py:461-479 (get_evaluation_metric), same commit; trainer.validate calls
`eval_score = self.eval_criterion(output, target)` then `.item()` outside.
Kept: MeanIoU verbatim; get_evaluation_metric's config plumbing.
Simplified: `_metric_class` looks the class up in this module's globals instead of
`importlib.import_module("pytorch3dunet.unet3d.metrics")`; 3-class 2x4x4 volumes.
"""
import torch


class MeanIoU:
    """
    Computes IoU for each class separately and then averages over all classes.

    Args:
        skip_background (bool): if True, background class (i.e. 0-label) will be skipped when computing IoU
    """

    def __init__(self, skip_background=True, **kwargs):
        self.skip_background = skip_background

    def __call__(self, input, target):
        assert input.dim() == 5

        n_classes = input.size(1)

        if target.dim() == 4:
            # convert input to segmentation
            input = input.argmax(dim=1)

        assert input.size() == target.size()

        per_batch_iou = []
        for _input, _target in zip(input, target, strict=True):
            # convert target to byte
            _target = _target.byte()
            per_channel_iou = []
            start_idx = 0
            # skip background only if target is 4D; for channel-wise computation (i.e. if target is 5D) we need to include it
            if self.skip_background and target.dim() == 4:
                start_idx = 1

            for c in range(start_idx, n_classes):
                if target.dim() == 5:
                    iou = self._jaccard_index(_input[c] > 0.5, _target[c])
                    per_channel_iou.append(iou)
                else:
                    iou = self._jaccard_index(_input == c, _target == c)
                    per_channel_iou.append(iou)

            assert per_channel_iou, "All channels were ignored from the computation"
            mean_iou = torch.tensor(per_channel_iou).mean()
            per_batch_iou.append(mean_iou)

        return torch.tensor(per_batch_iou).mean()

    def _jaccard_index(self, prediction, target):
        epsilon = 1e-8
        intersection = torch.logical_and(target, prediction).sum()
        union = torch.logical_or(target, prediction).sum()
        return (intersection + epsilon) / (union + epsilon)


def get_evaluation_metric(config):
    def _metric_class(class_name):
        clazz = globals()[class_name]
        return clazz

    assert "eval_metric" in config, "Could not find evaluation metric configuration"
    metric_config = config["eval_metric"]
    metric_class = _metric_class(metric_config["name"])
    return metric_class(**metric_config)


CONFIG = {"eval_metric": {"name": "MeanIoU", "skip_background": True}}


def create_trainer_metric():
    eval_criterion = torch.compile(get_evaluation_metric(CONFIG))
    return eval_criterion


def make():
    torch.manual_seed(0)
    probs = torch.softmax(torch.randn(2, 3, 2, 4, 4), dim=1)
    labels = torch.randint(0, 3, (2, 2, 4, 4))
    onehot = torch.nn.functional.one_hot(labels, 3).permute(0, 4, 1, 2, 3)
    return get_evaluation_metric(CONFIG), [(probs, labels), (probs, onehot)]
