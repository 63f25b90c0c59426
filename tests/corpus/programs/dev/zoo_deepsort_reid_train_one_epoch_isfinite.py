"""deep_sort_pytorch re-ID training: `train_one_epoch` compiled whole: per-batch CE loss and backward, a running mean, `torch.eq(pred, labels).sum()` accumulated into a tensor, `if not torch.isfinite(loss)` with sys.exit, the optimizer step, and `.item()` on the totals.

Source: ZQPei/deep_sort_pytorch@4f910afc16860ff05c6be408b120a49524bd4f68:deep_sort/deep/multi_train_utils/train_eval_utils.py:27-63
Also: deep_sort/deep/multi_train_utils/distributed_utils.py:34-67 (is_main_process,
reduce_value); deep_sort/deep/model.py (Net's classifier head, reduced below).
Kept: train_one_epoch verbatim except the tqdm wrapper (is_main_process() is true, and the
`data_loader.desc = ...` line stays, written to a plain object holding the batches);
reduce_value / is_main_process verbatim; SGD with momentum as in train.py.
Simplified: the device is passed as torch.device('cpu') (main() passes the string 'cpu',
which makes the `device != torch.device('cpu')` test call cuda.synchronize); Net reduced to one conv + BN + pooling + the original classifier head
(Linear, BatchNorm1d, ReLU, Dropout, Linear), 5 classes, two batches of 4 crops at 16x8.
"""
import sys

import torch
import torch.nn as nn
import torch.distributed as dist


def is_dist_avail_and_initialized():
    if not dist.is_available():
        return False
    if not dist.is_initialized():
        return False
    return True


def get_world_size():
    if not is_dist_avail_and_initialized():
        return 1
    return dist.get_world_size()


def get_rank():
    if not is_dist_avail_and_initialized():
        return 0
    return dist.get_rank()


def is_main_process():
    return get_rank() == 0


def reduce_value(value, average=True):
    world_size = get_world_size()
    if world_size < 2:
        return value
    with torch.no_grad():
        dist.all_reduce(value)
        if average:
            value /= world_size

        return value


class Loader:
    # stands in for tqdm(DataLoader): iterable with a writable `desc`
    def __init__(self, batches):
        self.batches = batches
        self.desc = ''

    def __iter__(self):
        return iter(self.batches)


def train_one_epoch(model, optimizer, data_loader, device, epoch):
    model.train()
    criterion = torch.nn.CrossEntropyLoss()
    mean_loss = torch.zeros(1).to(device)
    sum_num = torch.zeros(1).to(device)
    optimizer.zero_grad()

    for idx, (images, labels) in enumerate(data_loader):
        # forward
        images, labels = images.to(device), labels.to(device)
        outputs = model(images)
        loss = criterion(outputs, labels)

        # backward
        loss.backward()
        loss = reduce_value(loss, average=True)
        mean_loss = (mean_loss * idx + loss.detach()) / (idx + 1)
        pred = torch.max(outputs, dim=1)[1]
        sum_num += torch.eq(pred, labels).sum()

        if is_main_process():
            data_loader.desc = '[epoch {}] mean loss {}'.format(epoch, mean_loss.item())

        if not torch.isfinite(loss):
            print('loss is infinite, ending training')
            sys.exit(1)

        optimizer.step()
        optimizer.zero_grad()
    if device != torch.device('cpu'):
        torch.cuda.synchronize(device)
    sum_num = reduce_value(sum_num, average=False)

    return sum_num.item(), mean_loss.item()


class Net(nn.Module):
    def __init__(self, num_classes=751):
        super(Net, self).__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(3, 512, 3, stride=1, padding=1),
            nn.BatchNorm2d(512),
            nn.ReLU(inplace=True),
        )
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Linear(512, 256),
            nn.BatchNorm1d(256),
            nn.ReLU(inplace=True),
            nn.Dropout(),
            nn.Linear(256, num_classes),
        )

    def forward(self, x):
        x = self.conv(x)
        x = self.avgpool(x)
        x = x.view(x.size(0), -1)
        x = self.classifier(x)
        return x


train_epoch = torch.compile(train_one_epoch)


def make():
    torch.manual_seed(0)
    net = Net(num_classes=5)
    optimizer = torch.optim.SGD([p for p in net.parameters() if p.requires_grad], 0.01, momentum=0.9, weight_decay=5e-4)
    batches = [(torch.randn(4, 3, 16, 8), torch.randint(0, 5, (4,))) for _ in range(2)]
    return train_one_epoch, [(net, optimizer, Loader(batches), torch.device('cpu'), 0)]
