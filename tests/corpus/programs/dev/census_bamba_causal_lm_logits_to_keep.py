"""Bamba causal-LM head: `slice_logits_to_keep` with an int, a 1-d position tensor or a 2-d integer position
tensor (take_along_dim), plus the z-loss gated by a config float (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/bamba/modeling_bamba.py:1027-1080 and
src/transformers/modeling_utils.py:5089-5118 (slice_logits_to_keep)
Census: penguinwu/oss-model-graph-break-corpus: BambaModel's listed breaks are the mamba-mask helper and a
warning_once in the base model, not the LM head.
Kept: slice_logits_to_keep verbatim and BambaForCausalLM.forward's head/loss/z-loss block.
Simplified: the base model is an Embedding; the loss is cross-entropy on all positions.
"""
import torch
from torch import nn


def slice_logits_to_keep(hidden_states, logits_to_keep):
    """
    Slice `hidden_states` according to `logits_to_keep`, before the `lm_head` projection, so logits are only
    computed for the positions that are actually needed.
    """
    if isinstance(logits_to_keep, torch.Tensor) and logits_to_keep.ndim == 2:
        if logits_to_keep.dtype == torch.bool:
            return hidden_states[logits_to_keep]
        return torch.take_along_dim(hidden_states, logits_to_keep[..., None], dim=1)

    if isinstance(logits_to_keep, int):
        logits_to_keep = slice(-logits_to_keep, None)
    return hidden_states[:, logits_to_keep, :]


class BambaConfig:
    vocab_size = 10
    hidden_size = 4
    z_loss_coefficient = 0.1


class BambaForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.z_loss_coefficient = config.z_loss_coefficient
        self.model = nn.Embedding(config.vocab_size, config.hidden_size)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def loss_function(self, logits, labels, vocab_size):
        return nn.functional.cross_entropy(logits.reshape(-1, vocab_size), labels.reshape(-1))

    def forward(self, input_ids, labels=None, logits_to_keep=0):
        hidden_states = self.model(input_ids)
        hidden_states = slice_logits_to_keep(hidden_states, logits_to_keep)
        logits = self.lm_head(hidden_states)
        loss = None
        if labels is not None:
            loss = self.loss_function(logits=logits, labels=labels, vocab_size=self.config.vocab_size)
            if self.z_loss_coefficient > 0:
                z_loss = logits.logsumexp(dim=-1).to(dtype=loss.dtype).pow(2).mean()
                loss = loss + self.z_loss_coefficient * z_loss
        return loss, logits


lm = torch.compile(BambaForCausalLM(BambaConfig()))


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])
    return BambaForCausalLM(BambaConfig()), [
        (ids,),
        (ids, None, 1),
        (ids, None, torch.tensor([0, 2])),
        (ids, None, torch.tensor([[1, 3], [0, 2]])),
        (ids, torch.tensor([[2, 3, 4, 5], [6, 7, 8, 9]])),
    ]
