"""SimCLR's InfoNCE loss: the similarity matrix is read through boolean masks (`similarity_matrix[~mask]`, `similarity_matrix[labels.bool()]`) and reshaped with `.view(n, -1)`, inside the training step's autocast block, followed by the top-k accuracy helper.

Source: sthalles/SimCLR@1848fc934ad844ae630e6c452300433fe99acfd9:simclr.py:15-91
Also: models/resnet_simclr.py:7-30 (ResNetSimCLR: backbone.fc replaced by an MLP head),
utils.py:21-35 (accuracy).
Kept: info_nce_loss verbatim (args.batch_size / n_views / device / temperature
plumbing), the autocast(enabled=args.fp16_precision) block of train() and the
logging step's accuracy(logits, labels, topk=(1, 5)).
Simplified: the loop body is a method `train_step(images)` returning
(loss, top1, top5); no optimizer/GradScaler/SummaryWriter; torchvision's
resnet18 is a one-conv backbone with the same `.fc` replacement; 4 images per
view, 3x8x8.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.cuda.amp import autocast


def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)

        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))

        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


class TinyResNet(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


class ResNetSimCLR(nn.Module):

    def __init__(self, base_model, out_dim):
        super(ResNetSimCLR, self).__init__()
        self.resnet_dict = {"resnet18": TinyResNet(num_classes=out_dim)}

        self.backbone = self._get_basemodel(base_model)
        dim_mlp = self.backbone.fc.in_features

        # add mlp projection head
        self.backbone.fc = nn.Sequential(nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.backbone.fc)

    def _get_basemodel(self, model_name):
        try:
            model = self.resnet_dict[model_name]
        except KeyError:
            raise ValueError(
                "Invalid backbone architecture. Check the config file and pass one of: resnet18 or resnet50")
        else:
            return model

    def forward(self, x):
        return self.backbone(x)


class SimCLR(object):

    def __init__(self, *args, **kwargs):
        self.args = kwargs['args']
        self.model = kwargs['model'].to(self.args.device)
        self.criterion = torch.nn.CrossEntropyLoss().to(self.args.device)

    def info_nce_loss(self, features):

        labels = torch.cat([torch.arange(self.args.batch_size) for i in range(self.args.n_views)], dim=0)
        labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()
        labels = labels.to(self.args.device)

        features = F.normalize(features, dim=1)

        similarity_matrix = torch.matmul(features, features.T)

        # discard the main diagonal from both: labels and similarities matrix
        mask = torch.eye(labels.shape[0], dtype=torch.bool).to(self.args.device)
        labels = labels[~mask].view(labels.shape[0], -1)
        similarity_matrix = similarity_matrix[~mask].view(similarity_matrix.shape[0], -1)

        # select and combine multiple positives
        positives = similarity_matrix[labels.bool()].view(labels.shape[0], -1)

        # select only the negatives the negatives
        negatives = similarity_matrix[~labels.bool()].view(similarity_matrix.shape[0], -1)

        logits = torch.cat([positives, negatives], dim=1)
        labels = torch.zeros(logits.shape[0], dtype=torch.long).to(self.args.device)

        logits = logits / self.args.temperature
        return logits, labels

    def train_step(self, images):
        images = torch.cat(images, dim=0)

        images = images.to(self.args.device)

        with autocast(enabled=self.args.fp16_precision):
            features = self.model(images)
            logits, labels = self.info_nce_loss(features)
            loss = self.criterion(logits, labels)

        top1, top5 = accuracy(logits, labels, topk=(1, 5))
        return loss, top1, top5


def build():
    args = argparse.Namespace(batch_size=4, n_views=2, temperature=0.07,
                              device=torch.device("cpu"), fp16_precision=False)
    return SimCLR(args=args, model=ResNetSimCLR(base_model="resnet18", out_dim=8))


simclr = build()
simclr.train_step = torch.compile(simclr.train_step)


def make():
    torch.manual_seed(0)
    trainer = build()
    views = [torch.randn(4, 3, 8, 8), torch.randn(4, 3, 8, 8)]
    return trainer.train_step, [(views,), ([views[1], views[0]],)]
