"""MSN (Masked Siamese Networks) loss: closure from `init_msn_loss` with soft-nearest-neighbour predictions, sharpened no-grad targets, optional Sinkhorn, me-max through an autograd.Function AllReduce, and a logging dict built from `len(set(targets.argmax(dim=1).tolist()))`.

Source: facebookresearch/msn@4388dc1eadbe3042b85d3296d41b9b207656e043:src/losses.py:17-137
Kept: init_msn_loss (sharpen, snn, loss closures with their defaults) and
distributed_sinkhorn verbatim; AllReduce from src/utils.py:226-241 (its
`dist.is_available() and dist.is_initialized()` guard); the call as
msn_train.py:181-185 builds it (num_views = focal + rand views, return_preds=True).
Simplified: 2 anchor views, 4 target samples, 8-dim embeddings, 6 prototypes
with smoothed one-hot labels; the module logger is unused here as in the original.
"""
from logging import getLogger
import torch
import math
import torch.distributed as dist


logger = getLogger()


class AllReduce(torch.autograd.Function):

    @staticmethod
    def forward(ctx, x):
        if (
            dist.is_available()
            and dist.is_initialized()
            and (dist.get_world_size() > 1)
        ):
            x = x.contiguous() / dist.get_world_size()
            dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, grads):
        return grads


def init_msn_loss(
    num_views=1,
    tau=0.1,
    me_max=True,
    return_preds=False
):
    """
    Make unsupervised MSN loss

    :num_views: number of anchor views
    :param tau: cosine similarity temperature
    :param me_max: whether to perform me-max regularization
    :param return_preds: whether to return anchor predictions
    """
    softmax = torch.nn.Softmax(dim=1)

    def sharpen(p, T):
        sharp_p = p**(1./T)
        sharp_p /= torch.sum(sharp_p, dim=1, keepdim=True)
        return sharp_p

    def snn(query, supports, support_labels, temp=tau):
        """ Soft Nearest Neighbours similarity classifier """
        query = torch.nn.functional.normalize(query)
        supports = torch.nn.functional.normalize(supports)
        return softmax(query @ supports.T / temp) @ support_labels

    def loss(
        anchor_views,
        target_views,
        prototypes,
        proto_labels,
        T=0.25,
        use_entropy=False,
        use_sinkhorn=False,
        sharpen=sharpen,
        snn=snn
    ):
        # Step 1: compute anchor predictions
        probs = snn(anchor_views, prototypes, proto_labels)

        # Step 2: compute targets for anchor predictions
        with torch.no_grad():
            targets = sharpen(snn(target_views, prototypes, proto_labels), T=T)
            if use_sinkhorn:
                targets = distributed_sinkhorn(targets)
            targets = torch.cat([targets for _ in range(num_views)], dim=0)

        # Step 3: compute cross-entropy loss H(targets, queries)
        loss = torch.mean(torch.sum(torch.log(probs**(-targets)), dim=1))

        # Step 4: compute me-max regularizer
        rloss = 0.
        if me_max:
            avg_probs = AllReduce.apply(torch.mean(probs, dim=0))
            rloss = - torch.sum(torch.log(avg_probs**(-avg_probs))) + math.log(float(len(avg_probs)))

        sloss = 0.
        if use_entropy:
            sloss = torch.mean(torch.sum(torch.log(probs**(-probs)), dim=1))

        # -- logging
        with torch.no_grad():
            num_ps = float(len(set(targets.argmax(dim=1).tolist())))
            max_t = targets.max(dim=1).values.mean()
            min_t = targets.min(dim=1).values.mean()
            log_dct = {'np': num_ps, 'max_t': max_t, 'min_t': min_t}

        if return_preds:
            return loss, rloss, sloss, log_dct, targets

        return loss, rloss, sloss, log_dct

    return loss


@torch.no_grad()
def distributed_sinkhorn(Q, num_itr=3, use_dist=True):
    _got_dist = use_dist and torch.distributed.is_available() \
        and torch.distributed.is_initialized() \
        and (torch.distributed.get_world_size() > 1)

    if _got_dist:
        world_size = torch.distributed.get_world_size()
    else:
        world_size = 1

    Q = Q.T
    B = Q.shape[1] * world_size  # number of samples to assign
    K = Q.shape[0]  # how many prototypes

    # make the matrix sums to 1
    sum_Q = torch.sum(Q)
    if _got_dist:
        torch.distributed.all_reduce(sum_Q)
    Q /= sum_Q

    for it in range(num_itr):
        # normalize each row: total weight per prototype must be 1/K
        sum_of_rows = torch.sum(Q, dim=1, keepdim=True)
        if _got_dist:
            torch.distributed.all_reduce(sum_of_rows)
        Q /= sum_of_rows
        Q /= K

        # normalize each column: total weight per sample must be 1/B
        Q /= torch.sum(Q, dim=0, keepdim=True)
        Q /= B

    Q *= B  # the colomns must sum to 1 so that Q is an assignment
    return Q.T


msn = torch.compile(init_msn_loss(
    num_views=2,
    tau=0.1,
    me_max=True,
    return_preds=True))


def make():
    torch.manual_seed(0)
    anchor_views = torch.randn(8, 8, requires_grad=True)
    target_views = torch.randn(4, 8)
    prototypes = torch.nn.Parameter(torch.randn(6, 8))
    proto_labels = torch.full((6, 6), 0.1 / 6) + torch.eye(6) * 0.9
    fn = init_msn_loss(num_views=2, tau=0.1, me_max=True, return_preds=True)
    return fn, [
        (anchor_views, target_views, prototypes, proto_labels, 0.25, False, False),
        (anchor_views, target_views, prototypes, proto_labels, 0.25, True, True),
    ]
