"""Megatron-LM's get_ltor_masks_and_position_ids: with reset_position_ids/reset_attention_mask it finds EOD positions with `position_ids[b, data[b] == eod_token]` and loops over them, slicing masks and positions with each tensor index.

Source: NVIDIA/Megatron-LM@018d03b9835fd7b492b9d5a743e22ead16784abf:megatron/utils.py:176-233 (get_batch, loss_func and forward_step from pretrain_gpt.py)
Kept: the mask/position builder with its eod_mask_loss, reset loops and
binary conversion; get_batch's token/label shift and the get_args() global
plumbing; forward_step calling the model with (tokens, position_ids,
attention_mask, labels) and loss_func's masked mean returned with a dict.
Simplified: no data iterator, tensor-parallel broadcast or DP all-reduce of
the loss; the GPT model is an embedding, one masked attention and a head
that returns per-token losses; vocab 8, sequences of 7 tokens.
"""
from argparse import Namespace
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

_GLOBAL_ARGS = Namespace(
    reset_position_ids=True,
    reset_attention_mask=True,
    eod_mask_loss=True,
    context_parallel_size=1,
    eod_token=0,
)


def get_args():
    """Return arguments."""
    return _GLOBAL_ARGS


def get_ltor_masks_and_position_ids(data,
                                    eod_token,
                                    reset_position_ids,
                                    reset_attention_mask,
                                    eod_mask_loss):
    """Build masks and position id for left to right model."""

    # Extract batch size and sequence length.
    micro_batch_size, seq_length = data.size()

    # Attention mask (lower triangular).
    if reset_attention_mask:
        att_mask_batch = micro_batch_size
    else:
        att_mask_batch = 1
    attention_mask = torch.tril(torch.ones(
        (att_mask_batch, seq_length, seq_length), device=data.device)).view(
            att_mask_batch, 1, seq_length, seq_length)

    # Loss mask.
    loss_mask = torch.ones(data.size(), dtype=torch.float, device=data.device)
    if eod_mask_loss:
        loss_mask[data == eod_token] = 0.0

    # Position ids.
    position_ids = torch.arange(seq_length, dtype=torch.long,
                                device=data.device)
    position_ids = position_ids.unsqueeze(0).expand_as(data)
    # We need to clone as the ids will be modifed based on batch index.
    if reset_position_ids:
        position_ids = position_ids.clone()

    if reset_position_ids or reset_attention_mask:
        # Loop through the batches:
        for b in range(micro_batch_size):

            # Find indecies where EOD token is.
            eod_index = position_ids[b, data[b] == eod_token]
            # Detach indecies from positions if going to modify positions.
            if reset_position_ids:
                eod_index = eod_index.clone()

            # Loop through EOD indecies:
            prev_index = 0
            for j in range(eod_index.size()[0]):
                i = eod_index[j]
                # Mask attention loss.
                if reset_attention_mask:
                    attention_mask[b, 0, (i + 1):, :(i + 1)] = 0
                # Reset positions.
                if reset_position_ids:
                    position_ids[b, (i + 1):] -= (i + 1 - prev_index)
                    prev_index = i + 1

    # Convert attention mask to binary:
    attention_mask = (attention_mask < 0.5)

    return attention_mask, loss_mask, position_ids


def get_batch(data):
    """Generate a batch."""
    args = get_args()

    tokens_ = data['text'].long()
    labels = tokens_[:, 1:].contiguous()
    tokens = tokens_[:, :-1].contiguous()

    # Get the masks and postition ids.
    attention_mask, loss_mask, position_ids = get_ltor_masks_and_position_ids(
        tokens,
        args.eod_token,
        args.reset_position_ids,
        args.reset_attention_mask,
        args.eod_mask_loss)

    return tokens, labels, loss_mask, attention_mask, position_ids


def loss_func(loss_mask, output_tensor):
    """Loss function."""
    args = get_args()

    losses = output_tensor.float()
    loss_mask = loss_mask.view(-1).float()
    loss = torch.sum(losses.view(-1) * loss_mask) / loss_mask.sum()

    return loss * args.context_parallel_size, {'lm loss': loss.clone().detach()}


class GPTModel(nn.Module):
    def __init__(self, vocab_size=8, hidden_size=8, max_position_embeddings=16):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden_size)
        self.position_embeddings = nn.Embedding(max_position_embeddings, hidden_size)
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size)
        self.output_layer = nn.Linear(hidden_size, vocab_size)

    def forward(self, input_ids, position_ids, attention_mask, labels=None):
        hidden = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        q, k, v = self.qkv(hidden).unsqueeze(1).chunk(3, dim=-1)
        scores = (q @ k.transpose(-1, -2)) / hidden.shape[-1] ** 0.5
        scores = scores.masked_fill(attention_mask, -10000.0)
        hidden = hidden + (scores.softmax(-1) @ v).squeeze(1)
        logits = self.output_layer(hidden)
        if labels is None:
            return logits
        return F.cross_entropy(logits.transpose(1, 2), labels, reduction='none')


def forward_step(data, model):
    """Forward training step."""
    tokens, labels, loss_mask, attention_mask, position_ids = get_batch(data)
    output_tensor = model(tokens, position_ids, attention_mask,
                          labels=labels)

    return output_tensor, partial(loss_func, loss_mask)


def train_step(data, model):
    output_tensor, loss_fn = forward_step(data, model)
    return loss_fn(output_tensor)


compiled_train_step = torch.compile(train_step)


def make():
    torch.manual_seed(0)
    model = GPTModel()
    with_eod = {'text': torch.tensor([[3, 5, 0, 2, 7, 0, 4, 1], [6, 6, 1, 3, 2, 5, 7, 4]])}
    no_eod = {'text': torch.tensor([[3, 5, 1, 2, 7, 6, 4, 1]])}
    return train_step, [(with_eod, model), (no_eod, model)]
