"""pytorch-grad-cam's classifier targets summed into the CAM loss: ClassifierOutputReST builds `torch.tensor([self.category] * model_output.shape[0])` for a cross-entropy term, FinerWeightedTarget weights comparison classes through a `select` lambda and `sum()` over generators (no data-dependent Python).

Source: jacobgil/pytorch-grad-cam@0fe25dac777f17e6200a10dc30159d3ffda62735:pytorch_grad_cam/utils/model_targets.py:6-37,111-134
Also: pytorch_grad_cam/base_cam.py@0666bb77aca3c5d8b1de8601bbb5bc128a6320d1 (forward: the loss line).
Kept: ClassifierOutputTarget, ClassifierOutputReST and FinerWeightedTarget
verbatim; BaseCAM's `sum([target(output) for target, output in zip(targets, outputs)])`.
Simplified: the hooked model is a small CNN classifier called in the
compiled function; the backward pass and CAM assembly are out of scope.
"""
import torch
from torch import nn


class ClassifierOutputTarget:
    def __init__(self, category):
        self.category = category

    def __call__(self, model_output):
        if len(model_output.shape) == 1:
            return model_output[self.category]
        return model_output[:, self.category]


class ClassifierOutputReST:
    """
    Using both pre-softmax and post-softmax, proposed in https://arxiv.org/abs/2501.06261
    """
    def __init__(self, category):
        self.category = category

    def __call__(self, model_output):
        if len(model_output.shape) == 1:
            target = torch.tensor([self.category], device=model_output.device)
            model_output = model_output.unsqueeze(0)
            return model_output[0][self.category] - torch.nn.functional.cross_entropy(model_output, target)
        else:
            target = torch.tensor([self.category] * model_output.shape[0], device=model_output.device)
            return model_output[:, self.category] - torch.nn.functional.cross_entropy(model_output, target)


class FinerWeightedTarget:
    def __init__(self, main_category, comparison_categories, alpha):
        self.main_category = main_category
        self.comparison_categories = comparison_categories
        self.alpha = alpha

    def __call__(self, model_output):
        select = lambda idx: model_output[idx] if model_output.ndim == 1 else model_output[..., idx]

        wn = select(self.main_category)

        prob = torch.softmax(model_output, dim=-1)

        weights = [prob[idx] if model_output.ndim == 1 else prob[..., idx] for idx in self.comparison_categories]
        numerator = sum(w * (wn - self.alpha * select(idx)) for w, idx in zip(weights, self.comparison_categories))
        denominator = sum(weights)

        return numerator / (denominator + 1e-9)


class CamLoss(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.model = nn.Sequential(
            nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, num_classes)
        )

    def forward(self, input_tensor, targets):
        outputs = self.model(input_tensor)
        loss = sum([target(output) for target, output in zip(targets, outputs)])
        return loss


def make():
    torch.manual_seed(0)
    images = torch.randn(3, 3, 6, 6)
    targets = [
        ClassifierOutputTarget(1),
        ClassifierOutputReST(2),
        FinerWeightedTarget(0, [1, 3, 4], alpha=0.6),
    ]
    return CamLoss().eval(), [(images, targets), (images[:1], targets[2:])]


cam_loss = torch.compile(CamLoss().eval())
