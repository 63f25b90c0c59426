"""OpenFold AlphaFoldLoss: loss terms built as lambdas in a dict, each checked with `if torch.isnan(loss) or torch.isinf(loss):` (warn and replace), then scaled by `torch.sqrt(min(seq_len, crop_len))` with a tensor seq_len.

Source: aqlaboratory/openfold@ce0029e1199b65fd834fe822be50d936cfe57fd4:openfold/utils/loss.py:1685-1793
Also: openfold/utils/loss.py:37-56 (softmax_cross_entropy, sigmoid_cross_entropy),
562-607 (distogram_loss), 1571-1625 (experimentally_resolved_loss, masked_msa_loss);
openfold/config.py (loss config: per-term dicts with `weight` and the term's kwargs,
read through ml_collections.ConfigDict attribute and item access).
Kept: AlphaFoldLoss.loss/forward with the loss_fns dict of lambdas that splat
`{**batch, **self.config.<term>}`, the `self.config.tm.enabled` switch, the NaN/Inf
check with logging.warning and `loss.new_tensor(0., requires_grad=True)`, the
detach().clone() breakdown, the seq_len/crop_len scaling and _return_breakdown;
the three loss functions verbatim.
Simplified: structure-module terms (fape, supervised_chi, plddt, violation, renamed
ground truth) are left out, so the find_structural_violations/compute_renamed_ground_truth
preamble is gone; ml_collections.ConfigDict is a small dict subclass with attribute
access; 6 residues, 3 MSA rows, 8 distogram bins, 4 atom types.
"""
import logging

import torch
import torch.nn as nn

logger = logging.getLogger(__name__)


class ConfigDict(dict):
    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError as e:
            raise AttributeError(name) from e


def softmax_cross_entropy(logits, labels):
    loss = -1 * torch.sum(
        labels * torch.nn.functional.log_softmax(logits, dim=-1),
        dim=-1,
    )
    return loss


def sigmoid_cross_entropy(logits, labels):
    logits_dtype = logits.dtype
    logits = logits.double()
    labels = labels.double()
    log_p = torch.nn.functional.logsigmoid(logits)
    log_not_p = torch.nn.functional.logsigmoid(-1 * logits)
    loss = (-1. * labels) * log_p - (1. - labels) * log_not_p
    loss = loss.to(dtype=logits_dtype)
    return loss


def distogram_loss(
    logits,
    pseudo_beta,
    pseudo_beta_mask,
    min_bin=2.3125,
    max_bin=21.6875,
    no_bins=64,
    eps=1e-6,
    **kwargs,
):
    boundaries = torch.linspace(
        min_bin,
        max_bin,
        no_bins - 1,
        device=logits.device,
    )
    boundaries = boundaries ** 2

    dists = torch.sum(
        (pseudo_beta[..., None, :] - pseudo_beta[..., None, :, :]) ** 2,
        dim=-1,
        keepdims=True,
    )

    true_bins = torch.sum(dists > boundaries, dim=-1)

    errors = softmax_cross_entropy(
        logits,
        torch.nn.functional.one_hot(true_bins, no_bins),
    )

    square_mask = pseudo_beta_mask[..., None] * pseudo_beta_mask[..., None, :]

    denom = eps + torch.sum(square_mask, dim=(-1, -2))
    mean = errors * square_mask
    mean = torch.sum(mean, dim=-1)
    mean = mean / denom[..., None]
    mean = torch.sum(mean, dim=-1)

    # Average over the batch dimensions
    mean = torch.mean(mean)

    return mean


def experimentally_resolved_loss(
    logits: torch.Tensor,
    atom37_atom_exists: torch.Tensor,
    all_atom_mask: torch.Tensor,
    resolution: torch.Tensor,
    min_resolution: float,
    max_resolution: float,
    eps: float = 1e-8,
    **kwargs,
) -> torch.Tensor:
    errors = sigmoid_cross_entropy(logits, all_atom_mask)
    loss = torch.sum(errors * atom37_atom_exists, dim=-1)
    loss = loss / (eps + torch.sum(atom37_atom_exists, dim=(-1, -2)).unsqueeze(-1))
    loss = torch.sum(loss, dim=-1)

    loss = loss * (
        (resolution >= min_resolution) & (resolution <= max_resolution)
    )

    loss = torch.mean(loss)

    return loss


def masked_msa_loss(logits, true_msa, bert_mask, num_classes, eps=1e-8, **kwargs):
    errors = softmax_cross_entropy(
        logits, torch.nn.functional.one_hot(true_msa, num_classes=num_classes)
    )

    loss = errors * bert_mask
    loss = torch.sum(loss, dim=-1)
    scale = 0.5
    denom = eps + torch.sum(scale * bert_mask, dim=(-1, -2))
    loss = loss / denom[..., None]
    loss = torch.sum(loss, dim=-1)
    loss = loss * scale

    loss = torch.mean(loss)

    return loss


class AlphaFoldLoss(nn.Module):
    """Aggregation of the various losses described in the supplement"""

    def __init__(self, config):
        super(AlphaFoldLoss, self).__init__()
        self.config = config

    def loss(self, out, batch, _return_breakdown=False):
        loss_fns = {
            "distogram": lambda: distogram_loss(
                logits=out["distogram_logits"],
                **{**batch, **self.config.distogram},
            ),
            "experimentally_resolved": lambda: experimentally_resolved_loss(
                logits=out["experimentally_resolved_logits"],
                **{**batch, **self.config.experimentally_resolved},
            ),
            "masked_msa": lambda: masked_msa_loss(
                logits=out["masked_msa_logits"],
                **{**batch, **self.config.masked_msa},
            ),
        }

        if self.config.tm.enabled:
            raise NotImplementedError("tm loss is not part of this program")

        cum_loss = 0.
        losses = {}
        for loss_name, loss_fn in loss_fns.items():
            weight = self.config[loss_name].weight
            loss = loss_fn()
            if torch.isnan(loss) or torch.isinf(loss):
                logging.warning(f"{loss_name} loss is NaN. Skipping...")
                loss = loss.new_tensor(0., requires_grad=True)
            cum_loss = cum_loss + weight * loss
            losses[loss_name] = loss.detach().clone()
        losses["unscaled_loss"] = cum_loss.detach().clone()

        # Scale the loss by the square root of the minimum of the crop size and
        # the (average) sequence length. See subsection 1.9.
        seq_len = torch.mean(batch["seq_length"].float())
        crop_len = batch["aatype"].shape[-1]
        cum_loss = cum_loss * torch.sqrt(min(seq_len, crop_len))

        losses["loss"] = cum_loss.detach().clone()

        if not _return_breakdown:
            return cum_loss

        return cum_loss, losses

    def forward(self, out, batch, _return_breakdown=False):
        if not _return_breakdown:
            cum_loss = self.loss(out, batch, _return_breakdown)
            return cum_loss
        else:
            cum_loss, losses = self.loss(out, batch, _return_breakdown)
            return cum_loss, losses


def loss_config():
    return ConfigDict(
        distogram=ConfigDict(min_bin=2.3125, max_bin=21.6875, no_bins=8, eps=1e-6, weight=0.3),
        experimentally_resolved=ConfigDict(eps=1e-8, min_resolution=0.1, max_resolution=3.0, weight=0.0),
        masked_msa=ConfigDict(num_classes=5, eps=1e-8, weight=2.0),
        tm=ConfigDict(enabled=False, weight=0.0),
    )


loss_module = torch.compile(AlphaFoldLoss(loss_config()))


def make():
    torch.manual_seed(0)
    n_res, n_seq = 6, 3
    out = {
        "distogram_logits": torch.randn(1, n_res, n_res, 8),
        "experimentally_resolved_logits": torch.randn(1, n_res, 4),
        "masked_msa_logits": torch.randn(1, n_seq, n_res, 5),
    }
    batch = {
        "pseudo_beta": torch.randn(1, n_res, 3) * 5,
        "pseudo_beta_mask": torch.ones(1, n_res),
        "atom37_atom_exists": torch.ones(1, n_res, 4),
        "all_atom_mask": (torch.rand(1, n_res, 4) > 0.5).float(),
        "resolution": torch.tensor([2.0]),
        "true_msa": torch.randint(0, 5, (1, n_seq, n_res)),
        "bert_mask": (torch.rand(1, n_seq, n_res) > 0.5).float(),
        "seq_length": torch.tensor([n_res]),
        "aatype": torch.zeros(1, n_res, dtype=torch.long),
    }
    nan_out = dict(out)
    nan_out["masked_msa_logits"] = out["masked_msa_logits"].clone()
    nan_out["masked_msa_logits"][0, 1, 2, 0] = float("nan")
    short_batch = dict(batch)
    short_batch["seq_length"] = torch.tensor([4])
    return AlphaFoldLoss(loss_config()), [
        (out, batch),
        (nan_out, short_batch, True),
    ]
