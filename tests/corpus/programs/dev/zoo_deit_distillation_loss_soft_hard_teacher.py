"""DeiT training step: the distilled student returns (cls, dist) logits in training, DistillationLoss unpacks the tuple, runs the teacher under no_grad and adds a soft (KL, log_target) or hard (teacher argmax) term; the step then takes `loss.item()` and checks math.isfinite.

Source: facebookresearch/deit@7e160fe43f0252d17191b71cbb5826254114ea5b:losses.py:10-71
Also: engine.py:19-58 (train_one_epoch's per-batch body: mixup, cosub/bce_loss
switches, autocast, criterion call, loss.item(), the isfinite guard with print and
sys.exit), models.py (DistilledVisionTransformer.forward's training/eval return).
Kept: DistillationLoss verbatim (assert on the type, the tuple unpack, the 'none'
early return, the ValueError guard, teacher under no_grad, both branches), the
engine step body up to the finiteness check, the student's forward switch.
Simplified: the ViT backbone is a flatten + linear features stand-in; the teacher
is a small MLP; no optimizer/loss_scaler; the compiled entry is the per-batch step.
"""
import math
import sys
from types import SimpleNamespace

import torch
from torch.nn import functional as F


class DistillationLoss(torch.nn.Module):
    """
    This module wraps a standard criterion and adds an extra knowledge distillation loss by
    taking a teacher model prediction and using it as additional supervision.
    """
    def __init__(self, base_criterion: torch.nn.Module, teacher_model: torch.nn.Module,
                 distillation_type: str, alpha: float, tau: float):
        super().__init__()
        self.base_criterion = base_criterion
        self.teacher_model = teacher_model
        assert distillation_type in ['none', 'soft', 'hard']
        self.distillation_type = distillation_type
        self.alpha = alpha
        self.tau = tau

    def forward(self, inputs, outputs, labels):
        """
        Args:
            inputs: The original inputs that are feed to the teacher model
            outputs: the outputs of the model to be trained. It is expected to be
                either a Tensor, or a Tuple[Tensor, Tensor], with the original output
                in the first position and the distillation predictions as the second output
            labels: the labels for the base criterion
        """
        outputs_kd = None
        if not isinstance(outputs, torch.Tensor):
            # assume that the model outputs a tuple of [outputs, outputs_kd]
            outputs, outputs_kd = outputs
        base_loss = self.base_criterion(outputs, labels)
        if self.distillation_type == 'none':
            return base_loss

        if outputs_kd is None:
            raise ValueError("When knowledge distillation is enabled, the model is "
                             "expected to return a Tuple[Tensor, Tensor] with the output of the "
                             "class_token and the dist_token")
        # don't backprop throught the teacher
        with torch.no_grad():
            teacher_outputs = self.teacher_model(inputs)

        if self.distillation_type == 'soft':
            T = self.tau
            # taken from https://github.com/peterliht/knowledge-distillation-pytorch/blob/master/model/net.py#L100
            # with slight modifications
            distillation_loss = F.kl_div(
                F.log_softmax(outputs_kd / T, dim=1),
                #We provide the teacher's targets in log probability because we use log_target=True 
                #(as recommended in pytorch https://github.com/pytorch/pytorch/blob/9324181d0ac7b4f7949a574dbc3e8be30abe7041/torch/nn/functional.py#L2719)
                #but it is possible to give just the probabilities and set log_target=False. In our experiments we tried both.
                F.log_softmax(teacher_outputs / T, dim=1),
                reduction='sum',
                log_target=True
            ) * (T * T) / outputs_kd.numel()
            #We divide by outputs_kd.numel() to have the legacy PyTorch behavior. 
            #But we also experiments output_kd.size(0) 
            #see issue 61(https://github.com/facebookresearch/deit/issues/61) for more details
        elif self.distillation_type == 'hard':
            distillation_loss = F.cross_entropy(outputs_kd, teacher_outputs.argmax(dim=1))

        loss = base_loss * (1 - self.alpha) + distillation_loss * self.alpha
        return loss


class DistilledVisionTransformer(torch.nn.Module):
    def __init__(self, in_dim=12, embed_dim=8, num_classes=5):
        super().__init__()
        self.features = torch.nn.Linear(in_dim, 2 * embed_dim)
        self.head = torch.nn.Linear(embed_dim, num_classes)
        self.head_dist = torch.nn.Linear(embed_dim, num_classes)

    def forward_features(self, x):
        x = self.features(x.flatten(1))
        return x.chunk(2, dim=-1)

    def forward(self, x):
        x, x_dist = self.forward_features(x)
        x = self.head(x)
        x_dist = self.head_dist(x_dist)
        if self.training:
            return x, x_dist
        else:
            # during inference, return the average of both classifier predictions
            return (x + x_dist) / 2


@torch.compile(fullgraph=False)
def train_step(model, criterion, samples, targets, args, mixup_fn=None):
    if mixup_fn is not None:
        samples, targets = mixup_fn(samples, targets)

    if args.cosub:
        samples = torch.cat((samples,samples),dim=0)

    if args.bce_loss:
        targets = targets.gt(0.0).type(targets.dtype)

    with torch.cuda.amp.autocast():
        outputs = model(samples)
        if not args.cosub:
            loss = criterion(samples, outputs, targets)
        else:
            outputs = torch.split(outputs, outputs.shape[0]//2, dim=0)
            loss = 0.25 * criterion(outputs[0], targets)
            loss = loss + 0.25 * criterion(outputs[1], targets)
            loss = loss + 0.25 * criterion(outputs[0], outputs[1].detach().sigmoid())
            loss = loss + 0.25 * criterion(outputs[1], outputs[0].detach().sigmoid())

    loss_value = loss.item()

    if not math.isfinite(loss_value):
        print("Loss is {}, stopping training".format(loss_value))
        sys.exit(1)

    return loss, loss_value


def make():
    torch.manual_seed(0)
    student = DistilledVisionTransformer()
    teacher = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 16), torch.nn.ReLU(), torch.nn.Linear(16, 5)).eval()
    base = torch.nn.CrossEntropyLoss()
    soft = DistillationLoss(base, teacher, 'soft', alpha=0.5, tau=3.0)
    hard = DistillationLoss(base, teacher, 'hard', alpha=0.5, tau=1.0)
    none = DistillationLoss(base, teacher, 'none', alpha=0.5, tau=1.0)
    args = SimpleNamespace(cosub=False, bce_loss=False)
    samples = torch.randn(4, 3, 2, 2)
    targets = torch.tensor([0, 3, 1, 4])
    return train_step._torchdynamo_orig_callable, [
        (student, soft, samples, targets, args),
        (student, hard, samples, targets, args),
        (student, none, samples, targets, args),
    ]
