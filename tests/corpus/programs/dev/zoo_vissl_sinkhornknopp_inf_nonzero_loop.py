"""VISSL's SwAV loss: distributed_sinkhornknopp replaces infs by looping over `torch.nonzero(torch.isinf(Q))` behind `if len(ind) > 0`, adds an epsilon when `len(torch.nonzero(u == 0)) > 0`, takes `hard_assignment` as a tensor comparison, and the criterion logs when `torch.isnan(loss)`.

Source: facebookresearch/vissl@09270ed25a6c2cf71263d955b64cbe076d34ac45:vissl/losses/distibuted_sinkhornknopp.py:11-88
Also: vissl/losses/swav_loss.py:29-305 (SwAVLoss.forward, SwAVCriterion.__init__/forward),
facebookresearch/ClassyVision@08a82e88fcfa143933832994ace2424c03dd43b8:classy_vision/generic/distributed_util.py:22-196
(all_reduce_sum/max through all_reduce_op, is_distributed_training_run, get_rank, get_world_size).
Kept: the sinkhorn function verbatim, SwAVLoss.forward's use_queue expression,
head loop, `num_iteration` buffer increment, the criterion's double-precision and
log-sum-exp paths, `np.delete(np.arange(...))` crop selection and the NaN logging.
Simplified: no queue (local_queue_length 0, the vissl default), so
initialize_queue/update_emb_queue are omitted; the NaN branch only logs (the
original also torch.saves the matrices through g_pathmgr); `.cuda()` on the
softmax modules and get_cuda_device_index are dropped (use_gpu False);
temp_hard_assignment_iters is 0 (the vissl default), so the hard-assignment side
is not taken, and neither is the inf-in-`u` replacement (u is never 0 after the
epsilon step). 2 crops of 4 samples, 3 prototypes.
"""
import logging
import math
from typing import Callable, List

import numpy as np
import torch
from torch import nn


def convert_to_distributed_tensor(tensor: torch.Tensor):
    orig_device = "cpu" if not tensor.is_cuda else "gpu"
    if (
        torch.distributed.is_available()
        and torch.distributed.get_backend() == torch.distributed.Backend.NCCL
        and not tensor.is_cuda
    ):
        tensor = tensor.cuda()
    return (tensor, orig_device)


def convert_to_normal_tensor(tensor: torch.Tensor, orig_device: str) -> torch.Tensor:
    if tensor.is_cuda and orig_device == "cpu":
        tensor = tensor.cpu()
    return tensor


def is_distributed_training_run() -> bool:
    return (
        torch.distributed.is_available()
        and torch.distributed.is_initialized()
        and (torch.distributed.get_world_size() > 1)
    )


def all_reduce_op(
    tensor: torch.Tensor,
    op: torch.distributed.ReduceOp,
    after_op_func: Callable[[torch.Tensor], torch.Tensor] = None,
) -> torch.Tensor:
    if is_distributed_training_run():
        tensor, orig_device = convert_to_distributed_tensor(tensor)
        torch.distributed.all_reduce(tensor, op)
        if after_op_func is not None:
            tensor = after_op_func(tensor)
        tensor = convert_to_normal_tensor(tensor, orig_device)
    return tensor


def all_reduce_sum(tensor: torch.Tensor) -> torch.Tensor:
    return all_reduce_op(tensor, torch.distributed.ReduceOp.SUM)


def all_reduce_max(tensor: torch.Tensor) -> torch.Tensor:
    return all_reduce_op(tensor, torch.distributed.ReduceOp.MAX)


def get_world_size() -> int:
    return (
        torch.distributed.get_world_size()
        if torch.distributed.is_available() and torch.distributed.is_initialized()
        else 1
    )


def get_rank() -> int:
    return (
        torch.distributed.get_rank()
        if torch.distributed.is_available() and torch.distributed.is_initialized()
        else 0
    )


def distributed_sinkhornknopp(
    Q: torch.Tensor,
    num_iter: int,
    hard_assignment: bool,
    world_size: int,
    use_double_prec: bool,
    use_gpu: bool,
) -> torch.Tensor:
    """
    Apply the distributed sinknorn optimization on the scores matrix to
    find the assignments.

        Input shape: (num_prototypes, batch_size)
        Output shape: (batch_size, num_prototypes)
    """
    eps_num_stab = 1e-12
    with torch.no_grad():
        # remove potential infs in Q
        # replace the inf entries with the max of the finite entries in Q
        mask = torch.isinf(Q)
        ind = torch.nonzero(mask)
        if len(ind) > 0:
            for i in ind:
                Q[i[0], i[1]] = 0
            m = torch.max(Q)
            for i in ind:
                Q[i[0], i[1]] = m
        sum_Q = torch.sum(Q, dtype=Q.dtype)
        all_reduce_sum(sum_Q)
        Q /= sum_Q

        k = Q.shape[0]
        n = Q.shape[1]
        N = world_size * Q.shape[1]

        # we follow the u, r, c and Q notations from
        # https://arxiv.org/abs/1911.05371
        r = torch.ones(k) / k
        c = torch.ones(n) / N
        if use_double_prec:
            r, c = r.double(), c.double()

        if use_gpu:
            r = r.cuda(non_blocking=True)
            c = c.cuda(non_blocking=True)

        for _ in range(num_iter):
            u = torch.sum(Q, dim=1, dtype=Q.dtype)
            all_reduce_sum(u)

            # for numerical stability, add a small epsilon value
            # for non-zero Q values.
            if len(torch.nonzero(u == 0)) > 0:
                Q += eps_num_stab
                u = torch.sum(Q, dim=1, dtype=Q.dtype)
                all_reduce_sum(u)
            u = r / u

            # remove potential infs in "u"
            # replace the inf entries with the max of the finite entries in "u"
            mask = torch.isinf(u)
            ind = torch.nonzero(mask)
            if len(ind) > 0:
                for i in ind:
                    u[i[0]] = 0
                m = torch.max(u)
                for i in ind:
                    u[i[0]] = m

            Q *= u.unsqueeze(1)
            Q *= (c / torch.sum(Q, dim=0, dtype=Q.dtype)).unsqueeze(0)
        Q = (Q / torch.sum(Q, dim=0, keepdim=True, dtype=Q.dtype)).t().float()

        if hard_assignment:
            index_max = torch.max(Q, dim=1)[1]
            Q.zero_()
            Q.scatter_(1, index_max.unsqueeze(1), 1)
        return Q


class SwAVCriterion(nn.Module):
    def __init__(
        self,
        temperature: float,
        crops_for_assign: List[int],
        num_crops: int,
        num_iters: int,
        epsilon: float,
        use_double_prec: bool,
        num_prototypes: List[int],
        local_queue_length: int,
        embedding_dim: int,
        temp_hard_assignment_iters: int,
        output_dir: str,
    ):
        super(SwAVCriterion, self).__init__()

        self.use_gpu = False

        self.temperature = temperature
        self.crops_for_assign = crops_for_assign
        self.num_crops = num_crops
        self.nmb_sinkhornknopp_iters = num_iters
        self.epsilon = epsilon
        self.use_double_prec = use_double_prec
        self.num_prototypes = num_prototypes
        self.nmb_heads = len(self.num_prototypes)
        self.embedding_dim = embedding_dim
        self.temp_hard_assignment_iters = temp_hard_assignment_iters
        self.local_queue_length = local_queue_length
        self.dist_rank = get_rank()
        self.world_size = get_world_size()
        self.log_softmax = nn.LogSoftmax(dim=1)
        self.softmax = nn.Softmax(dim=1)
        self.register_buffer("num_iteration", torch.zeros(1, dtype=int))
        self.use_queue = False
        self.output_dir = output_dir

    def forward(self, scores: torch.Tensor, head_id: int):
        assert scores.shape[0] % self.num_crops == 0
        bs = scores.shape[0] // self.num_crops

        total_loss = 0
        n_term_loss = 0

        # 2 big crops are normally used for the assignment
        for i, crop_id in enumerate(self.crops_for_assign):

            with torch.no_grad():
                scores_this_crop = scores[bs * crop_id : bs * (crop_id + 1)]

                if self.use_double_prec:
                    assignments = torch.exp(
                        scores_this_crop.double() / np.float64(self.epsilon)
                    ).t()
                    assignments = assignments.double()
                else:
                    assignments = scores_this_crop / self.epsilon
                    # use the log-sum-exp trick for numerical stability.
                    M = torch.max(assignments)
                    all_reduce_max(M)
                    assignments -= M
                    assignments = torch.exp(assignments).t()

                assignments = distributed_sinkhornknopp(
                    Q=assignments,
                    hard_assignment=self.num_iteration
                    < self.temp_hard_assignment_iters,
                    world_size=self.world_size,
                    num_iter=self.nmb_sinkhornknopp_iters,
                    use_gpu=self.use_gpu,
                    use_double_prec=self.use_double_prec,
                )
                assignments = assignments[:bs]

            loss = 0
            idx_crop_pred = np.delete(np.arange(self.num_crops), crop_id)
            for p in idx_crop_pred:
                if self.use_double_prec:
                    loss -= torch.mean(
                        torch.sum(
                            assignments
                            * self.log_softmax(
                                scores[bs * p : bs * (p + 1)].double()
                                / np.float64(self.temperature)
                            ),
                            dim=1,
                            dtype=assignments.dtype,
                        )
                    )
                else:
                    loss -= torch.mean(
                        torch.sum(
                            assignments
                            * self.log_softmax(
                                scores[bs * p : bs * (p + 1)] / self.temperature
                            ),
                            dim=1,
                            dtype=assignments.dtype,
                        )
                    )

            loss /= len(idx_crop_pred)

            total_loss += loss
            n_term_loss += 1

            # Stop training if NaN appears and log the output to help debugging
            if torch.isnan(loss):
                logging.info(
                    f"Infinite Loss or NaN. Loss value: {loss}, rank: {self.dist_rank}"
                )

        total_loss /= n_term_loss
        return total_loss


class QueueConfig:
    start_iter = 0
    local_queue_length = 0


class LossConfig:
    temperature = 0.1
    crops_for_assign = [0, 1]
    num_crops = 2
    num_iters = 3
    epsilon = 0.05
    use_double_precision = True
    num_prototypes = [3]
    queue = QueueConfig()
    embedding_dim = 6
    temp_hard_assignment_iters = 0
    output_dir = "."


class SwAVLoss(nn.Module):
    def __init__(self, loss_config):
        super().__init__()

        self.loss_config = loss_config
        self.queue_start_iter = self.loss_config.queue.start_iter
        self.swav_criterion = SwAVCriterion(
            self.loss_config.temperature,
            self.loss_config.crops_for_assign,
            self.loss_config.num_crops,
            self.loss_config.num_iters,
            self.loss_config.epsilon,
            self.loss_config.use_double_precision,
            self.loss_config.num_prototypes,
            self.loss_config.queue.local_queue_length,
            self.loss_config.embedding_dim,
            self.loss_config.temp_hard_assignment_iters,
            self.loss_config.output_dir,
        )

    def forward(self, output: torch.Tensor, target: torch.Tensor):
        self.swav_criterion.use_queue = (
            self.swav_criterion.local_queue_length > 0
            and self.swav_criterion.num_iteration >= self.queue_start_iter
        )
        loss = 0
        for i, prototypes_scores in enumerate(output[1:]):
            loss += self.swav_criterion(prototypes_scores, i)
        loss /= len(output) - 1
        self.swav_criterion.num_iteration += 1
        return loss


swav_loss = torch.compile(SwAVLoss(LossConfig()))


def make():
    torch.manual_seed(0)
    embedding = torch.randn(8, 6)
    scores = torch.randn(8, 3)
    overflow = scores.clone()
    overflow[1, 2] = 50.0
    dead_prototype = scores.clone()
    dead_prototype[:4, 0] = -60.0
    nan_scores = scores.clone()
    nan_scores[5, 1] = float("nan")
    target = torch.zeros(8, dtype=torch.long)
    return SwAVLoss(LossConfig()), [
        ([embedding, scores], target),
        ([embedding, overflow], target),
        ([embedding, dead_prototype], target),
        ([embedding, nan_scores], target),
    ]
