"""DeepLabV3+ training iterations: FocalLoss (cross entropy with ignore_index=255) or CE chosen by `opts.loss_type`, backward + SGD step, `loss.detach().cpu().numpy()` accumulated into a Python float, a modulo-10 progress print and a PolyLR step.

Source: VainF/DeepLabV3Plus-Pytorch@4e1087de98bc49d55b9239ae92810ef7368660db:main.py:256-275,322-348,375-378
Also: utils/loss.py:5-21 (FocalLoss), utils/scheduler.py (PolyLR).
Kept: FocalLoss and PolyLR verbatim; the inner `for (images, labels) in train_loader` body
verbatim (cur_itrs counter, np_loss, interval_loss, the print, scheduler.step(), the
total_itrs return), with the criterion selection from main().
Simplified: the loop is the body of a `train_epoch` function (compiled); validation,
checkpointing and visdom are off (val_interval larger than the run, vis None); the
total_itrs `return` hands back cur_itrs instead of leaving main(); the model
is a 2-conv segmentation net; 3 classes, 16x16 crops, 11 iterations so the print fires.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import _LRScheduler


class FocalLoss(nn.Module):
    def __init__(self, alpha=1, gamma=0, size_average=True, ignore_index=255):
        super(FocalLoss, self).__init__()
        self.alpha = alpha
        self.gamma = gamma
        self.ignore_index = ignore_index
        self.size_average = size_average

    def forward(self, inputs, targets):
        ce_loss = F.cross_entropy(
            inputs, targets, reduction='none', ignore_index=self.ignore_index)
        pt = torch.exp(-ce_loss)
        focal_loss = self.alpha * (1-pt)**self.gamma * ce_loss
        if self.size_average:
            return focal_loss.mean()
        else:
            return focal_loss.sum()


class PolyLR(_LRScheduler):
    def __init__(self, optimizer, max_iters, power=0.9, last_epoch=-1, min_lr=1e-6):
        self.power = power
        self.max_iters = max_iters  # avoid zero lr
        self.min_lr = min_lr
        super(PolyLR, self).__init__(optimizer, last_epoch)
    
    def get_lr(self):
        return [ max( base_lr * ( 1 - self.last_epoch/self.max_iters )**self.power, self.min_lr)
                for base_lr in self.base_lrs]


class Opts:
    loss_type = 'focal_loss'
    total_itrs = 30
    val_interval = 100
    lr = 0.01
    weight_decay = 1e-4


class CEOpts(Opts):
    loss_type = 'cross_entropy'


class TinySeg(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
        self.classifier = nn.Conv2d(8, num_classes, 1)

    def forward(self, x):
        input_shape = x.shape[-2:]
        x = self.classifier(self.backbone(x))
        return F.interpolate(x, size=input_shape, mode='bilinear', align_corners=False)


def train_epoch(opts, model, optimizer, scheduler, criterion, train_loader, device, cur_itrs, cur_epochs, vis=None):
    interval_loss = 0
    for (images, labels) in train_loader:
        cur_itrs += 1

        images = images.to(device, dtype=torch.float32)
        labels = labels.to(device, dtype=torch.long)

        optimizer.zero_grad()
        outputs = model(images)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()

        np_loss = loss.detach().cpu().numpy()
        interval_loss += np_loss
        if vis is not None:
            vis.vis_scalar('Loss', cur_itrs, np_loss)

        if (cur_itrs) % 10 == 0:
            interval_loss = interval_loss / 10
            print("Epoch %d, Itrs %d/%d, Loss=%f" %
                  (cur_epochs, cur_itrs, opts.total_itrs, interval_loss))
            interval_loss = 0.0

        scheduler.step()

        if cur_itrs >= opts.total_itrs:
            return cur_itrs
    return cur_itrs


def setup(opts):
    model = TinySeg(num_classes=3)
    optimizer = torch.optim.SGD(params=model.parameters(), lr=opts.lr, momentum=0.9, weight_decay=opts.weight_decay)
    scheduler = PolyLR(optimizer, opts.total_itrs, power=0.9)
    # Set up criterion
    if opts.loss_type == 'focal_loss':
        criterion = FocalLoss(ignore_index=255, size_average=True)
    elif opts.loss_type == 'cross_entropy':
        criterion = nn.CrossEntropyLoss(ignore_index=255, reduction='mean')
    return model, optimizer, scheduler, criterion


train_epoch_compiled = torch.compile(train_epoch)


def _loader(n):
    out = []
    for _ in range(n):
        labels = torch.randint(0, 3, (2, 16, 16))
        labels[:, :2] = 255
        out.append((torch.randn(2, 3, 16, 16), labels))
    return out


def make():
    torch.manual_seed(0)
    opts = Opts()
    model, optimizer, scheduler, criterion = setup(opts)
    model.train()
    ce_opts = CEOpts()
    ce_model, ce_optimizer, ce_scheduler, ce_criterion = setup(ce_opts)
    ce_model.train()
    return train_epoch, [
        (opts, model, optimizer, scheduler, criterion, _loader(11), 'cpu', 0, 1),
        (ce_opts, ce_model, ce_optimizer, ce_scheduler, ce_criterion, _loader(3), 'cpu', 28, 3),
    ]
