"""MMF's multi-similarity loss behind the MMFLoss wrapper: positive and negative pairs come from `torch.masked_select`, hard mining selects again against `pos_pair_[0]` / `neg_pair_[-1]`, and `len(pair) == 0` decides whether a sample contributes.

Source: facebookresearch/mmf@b0ffc7fba39f210f833c127362146aec01a2f259:mmf/modules/losses.py:132-222,874-879,950-1045
Kept: MMFLoss.__init__/forward (registry lookup, mapping params, the
dataset filter, dict wrapping, 0-dim view, dataset_type/dataset_name key),
calc_ms_loss, and MSLoss verbatim (get_positive_and_negative_pairs with
its multilabel and hard-mining branches, the per-sample loop with
`continue`, the empty-loss fallback).
Simplified: the registry, SampleList and log_class_usage are minimal local
stand-ins for mmf.common.registry, mmf.common.sample and mmf.utils.logger.
"""
import collections
import collections.abc
from typing import Dict

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


class Registry:
    mapping = {"loss_name_mapping": {}}

    @classmethod
    def register_loss(cls, name):
        def wrap(to_register):
            cls.mapping["loss_name_mapping"][name] = to_register
            return to_register

        return wrap

    @classmethod
    def get_loss_class(cls, name):
        return cls.mapping["loss_name_mapping"].get(name, None)


registry = Registry()


def log_class_usage(component_type, klass):
    """Records usage of a component (no-op outside fbcode)."""
    return None


class SampleList(collections.OrderedDict):
    def __getattr__(self, key):
        if key not in self:
            raise AttributeError(key)
        return self[key]


class MMFLoss(nn.Module):
    def __init__(self, params=None):
        super().__init__()
        if params is None:
            params = {}

        is_mapping = isinstance(params, collections.abc.MutableMapping)

        if is_mapping:
            if "type" not in params:
                raise ValueError(
                    "Parameters to loss must have 'type' field to"
                    "specify type of loss to instantiate"
                )
            else:
                loss_name = params["type"]
        else:
            assert isinstance(params, str), (
                "loss must be a string or dictionary with 'type' key"
            )
            loss_name = params

        self.name = loss_name

        loss_class = registry.get_loss_class(loss_name)

        log_class_usage("Loss", loss_class)

        if loss_class is None:
            raise ValueError(f"No loss named {loss_name} is registered to registry")
        # Special case of multi as it requires an array
        if loss_name.startswith("multi"):
            assert is_mapping
            self.loss_criterion = loss_class(params)
        else:
            if is_mapping:
                loss_params = params.get("params", {})
            else:
                loss_params = {}
            self.loss_criterion = loss_class(**loss_params)

    def forward(self, sample_list: Dict[str, Tensor], model_output: Dict[str, Tensor]):
        loss_dict = {}
        if hasattr(self.loss_criterion, "datasets"):
            datasets = self.loss_criterion.datasets
            if (
                isinstance(datasets, list)
                and sample_list["dataset_name"] not in datasets
            ):
                return loss_dict

        loss_result = self.loss_criterion(sample_list, model_output)

        if not isinstance(loss_result, collections.abc.Mapping):
            loss_result = {"": loss_result}

        for child_loss_name, child_loss_result in loss_result.items():
            if not isinstance(child_loss_result, torch.Tensor):
                child_loss_result = torch.tensor(child_loss_result, dtype=torch.float)

            if child_loss_result.dim() == 0:
                child_loss_result = child_loss_result.view(1)

            if not torch.jit.is_scripting():
                key = "{}/{}/{}".format(
                    sample_list.dataset_type, sample_list.dataset_name, self.name
                )
            else:
                key = f"{self.name}"

            key = f"{key}/{child_loss_name}" if child_loss_name else key
            loss_dict[key] = child_loss_result

        return loss_dict


def calc_ms_loss(pair, base, param, multiplier):
    return (
        1.0
        / param
        * torch.log(1 + torch.sum(torch.exp(multiplier * param * (pair - base))))
    )


@registry.register_loss("ms_loss")
class MSLoss(nn.Module):
    """
    A Multi-Similarity loss between embeddings of similar and dissimilar
    labels is implemented here.
    """

    def __init__(
        self, alpha=50, beta=2, margin=0.5, hard_mining=True, is_multilabel=False
    ):
        super().__init__()
        self.alpha = alpha
        self.beta = beta
        self.hard_mining = hard_mining
        self.margin = margin
        self.is_multilabel = is_multilabel

    def get_positive_and_negative_pairs(self, sim_vec, targets, curr_target):
        # given a sample with a similarity vec (embedding similarity to other samples)
        # return pairs of samples which share the same targets/labels (positive pairs)
        # and pairs of samples which have different labels (negative pairs)
        if self.is_multilabel:
            pos_pair_ = torch.masked_select(
                sim_vec, torch.matmul(targets, targets[0]) > 0
            )
        else:
            pos_pair_ = torch.masked_select(sim_vec, targets == curr_target)

        #  remove itself
        pos_pair_ = torch.masked_select(pos_pair_, pos_pair_ < 1 - 1e-5)
        pos_pair_ = torch.sort(pos_pair_)[0]

        if self.is_multilabel:
            neg_pair_ = torch.masked_select(
                sim_vec, torch.matmul(targets, targets[0]) < 1e-5
            )
        else:
            neg_pair_ = torch.masked_select(sim_vec, targets != curr_target)
        neg_pair_ = torch.sort(neg_pair_)[0]

        if len(pos_pair_) == 0 or len(neg_pair_) == 0:
            return (pos_pair_, neg_pair_)

        if self.hard_mining is not None:
            neg_pair = torch.masked_select(neg_pair_, neg_pair_ + 0.1 > pos_pair_[0])
            pos_pair = torch.masked_select(pos_pair_, pos_pair_ - 0.1 < neg_pair_[-1])
            neg_pair_ = neg_pair
            pos_pair_ = pos_pair
        return (pos_pair_, neg_pair_)

    def forward(self, sample_list, model_output):
        # get the fused features and normalize
        fusion_features = model_output["fused_embedding"]
        inputs = F.normalize(fusion_features)

        # get the targets
        targets = sample_list["targets"]

        batch_size = inputs.size(0)
        # sim_mat(i,j) contains the similarity between fused_embeddings of ith
        # and jth samples in a batch
        sim_mat = torch.matmul(inputs, inputs.t())

        # this is the margin allowed for multi-similarity loss
        base = self.margin

        loss = []

        for i in range(batch_size):
            (pos_pair_, neg_pair_) = self.get_positive_and_negative_pairs(
                sim_mat[i], targets, targets[i]
            )
            # no compute needed when one of the pairs is not available
            if len(pos_pair_) == 0 or len(neg_pair_) == 0:
                continue

            pos_loss = calc_ms_loss(pos_pair_, base, self.beta, -1)
            neg_loss = calc_ms_loss(neg_pair_, base, self.alpha, 1)
            loss.append(pos_loss + neg_loss)

        if len(loss) == 0:
            loss = inputs.new_zeros(1, requires_grad=True)
        else:
            loss = sum(loss) / batch_size

        return loss


criterion = torch.compile(MMFLoss({"type": "ms_loss", "params": {"margin": 0.5}}))


def make():
    torch.manual_seed(0)
    loss = MMFLoss({"type": "ms_loss", "params": {"margin": 0.5}})
    base = torch.randn(2, 8)
    fused = torch.cat([base[0] + 0.1 * torch.randn(3, 8), base[1] + 0.1 * torch.randn(3, 8)])
    mixed = SampleList(targets=torch.tensor([0, 0, 0, 1, 1, 1]), dataset_type="train", dataset_name="hateful_memes")
    lonely = SampleList(targets=torch.tensor([0, 0, 0, 1, 1, 2]), dataset_type="train", dataset_name="hateful_memes")
    same = SampleList(targets=torch.tensor([3, 3, 3, 3, 3, 3]), dataset_type="val", dataset_name="hateful_memes")
    output = {"fused_embedding": fused}
    return loss, [(mixed, output), (lonely, output), (same, output)]
