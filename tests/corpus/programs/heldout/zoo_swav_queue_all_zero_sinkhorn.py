"""SwAV's training step: the feature queue is switched on by `if use_the_queue or not torch.all(queue[i, -1, :] == 0):`, then filled in place, and `distributed_sinkhorn` normalises the codes; the crop loop uses `np.delete(np.arange(np.sum(args.nmb_crops)), crop_id)`.

Source: facebookresearch/swav@06b1b7cbaf6ba2a792300d79c7299db98b93b7f9:main_swav.py:259-378
Also: src/resnet50.py:297-306 (forward_head with projection head, l2norm, prototypes).
Kept: the loss part of train()'s loop body verbatim (prototype normalisation
under no_grad, the queue test/fill, the sinkhorn call, the subloss loop and
the averaging), distributed_sinkhorn reading the module-level `args`.
Simplified: the loop body is a function `swav_step(model, inputs, queue,
use_the_queue)` returning (loss, queue, use_the_queue); no optimizer, AMP or
meters; `model.module` is the bare model (no DDP) and `dist.all_reduce` is
dropped (one process); the backbone is a conv + pool on one resolution (the
multi-crop grouping in ResNet.forward is omitted); 2 crops of 2 images.
"""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

args = argparse.Namespace(
    crops_for_assign=[0, 1],
    nmb_crops=[2],
    temperature=0.1,
    epsilon=0.05,
    sinkhorn_iterations=3,
    world_size=1,
)


class SwAVNet(nn.Module):
    def __init__(self, output_dim=8, hidden_mlp=16, nmb_prototypes=5, normalize=True):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.projection_head = nn.Sequential(
            nn.Linear(8, hidden_mlp),
            nn.BatchNorm1d(hidden_mlp),
            nn.ReLU(inplace=True),
            nn.Linear(hidden_mlp, output_dim),
        )
        self.l2norm = normalize
        self.prototypes = nn.Linear(output_dim, nmb_prototypes, bias=False)

    def forward_backbone(self, x):
        x = F.relu(self.conv(x))
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return x

    def forward_head(self, x):
        if self.projection_head is not None:
            x = self.projection_head(x)

        if self.l2norm:
            x = nn.functional.normalize(x, dim=1, p=2)

        if self.prototypes is not None:
            return x, self.prototypes(x)
        return x

    def forward(self, inputs):
        return self.forward_head(self.forward_backbone(torch.cat(inputs)))


@torch.no_grad()
def distributed_sinkhorn(out):
    Q = torch.exp(out / args.epsilon).t() # Q is K-by-B for consistency with notations from our paper
    B = Q.shape[1] * args.world_size # number of samples to assign
    K = Q.shape[0] # how many prototypes

    # make the matrix sums to 1
    sum_Q = torch.sum(Q)
    Q /= sum_Q

    for it in range(args.sinkhorn_iterations):
        # normalize each row: total weight per prototype must be 1/K
        sum_of_rows = torch.sum(Q, dim=1, keepdim=True)
        Q /= sum_of_rows
        Q /= K

        # normalize each column: total weight per sample must be 1/B
        Q /= torch.sum(Q, dim=0, keepdim=True)
        Q /= B

    Q *= B # the colomns must sum to 1 so that Q is an assignment
    return Q.t()


def swav_step(model, inputs, queue, use_the_queue):
    # normalize the prototypes
    with torch.no_grad():
        w = model.prototypes.weight.data.clone()
        w = nn.functional.normalize(w, dim=1, p=2)
        model.prototypes.weight.copy_(w)

    # ============ multi-res forward passes ... ============
    embedding, output = model(inputs)
    embedding = embedding.detach()
    bs = inputs[0].size(0)

    # ============ swav loss ... ============
    loss = 0
    for i, crop_id in enumerate(args.crops_for_assign):
        with torch.no_grad():
            out = output[bs * crop_id: bs * (crop_id + 1)].detach()

            # time to use the queue
            if queue is not None:
                if use_the_queue or not torch.all(queue[i, -1, :] == 0):
                    use_the_queue = True
                    out = torch.cat((torch.mm(
                        queue[i],
                        model.prototypes.weight.t()
                    ), out))
                # fill the queue
                queue[i, bs:] = queue[i, :-bs].clone()
                queue[i, :bs] = embedding[crop_id * bs: (crop_id + 1) * bs]

            # get assignments
            q = distributed_sinkhorn(out)[-bs:]

        # cluster assignment prediction
        subloss = 0
        for v in np.delete(np.arange(np.sum(args.nmb_crops)), crop_id):
            x = output[bs * v: bs * (v + 1)] / args.temperature
            subloss -= torch.mean(torch.sum(q * F.log_softmax(x, dim=1), dim=1))
        loss += subloss / (np.sum(args.nmb_crops) - 1)
    loss /= len(args.crops_for_assign)
    return loss, queue, use_the_queue


compiled_step = torch.compile(swav_step)


def make():
    torch.manual_seed(0)
    model = SwAVNet()
    inputs = [torch.randn(2, 3, 6, 6), torch.randn(2, 3, 6, 6)]
    empty_queue = torch.zeros(2, 4, 8)
    full_queue = F.normalize(torch.randn(2, 4, 8), dim=2)
    return swav_step, [
        (model, inputs, None, False),
        (model, inputs, empty_queue, False),
        (model, inputs, full_queue, False),
        (model, inputs, empty_queue, True),
    ]
