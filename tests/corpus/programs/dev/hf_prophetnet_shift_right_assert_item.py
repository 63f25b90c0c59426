"""ProphetNet seq2seq head: `_shift_right` asserts `torch.all(shifted >= 0).item()`, the label-smoothed n-gram loss keeps `smooth_loss[non_masked_tokens]`.

Source: huggingface/transformers@v5.23.0:src/transformers/models/prophetnet/modeling_prophetnet.py:318-339,1517-1643
Kept: ProphetNetPreTrainedModel._shift_right (the two config asserts, the
-100 masked_fill and the `.item()` assert), ProphetNetForConditionalGeneration
.forward's label plumbing (shift when no decoder inputs, n-gram stream view,
lm_head, contiguous check, tuple return when `return_dict` is off) and
_compute_loss verbatim (n-gram expanded targets with the
`disable_ngram_loss` break, nll loss, eps label smoothing over the
non-masked tokens).
Simplified: the encoder-decoder is replaced by an embedding and one linear
layer per n-gram stream (`outputs[1]` has the real shape); vocab 11, hidden
8, ngram 2.
"""
import torch
from torch import nn


class ProphetNetConfig:
    vocab_size = 11
    hidden_size = 8
    ngram = 2
    eps = 0.1
    disable_ngram_loss = False
    decoder_start_token_id = 0
    pad_token_id = 0
    return_dict = False


class TinyProphetNetModel(nn.Module):
    """Stands in for ProphetNetModel: returns (last_hidden_state, last_hidden_state_ngram)."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.streams = nn.ModuleList([nn.Linear(config.hidden_size, config.hidden_size) for _ in range(config.ngram)])

    def forward(self, input_ids=None, decoder_input_ids=None, return_dict=None):
        encoder_state = self.word_embeddings(input_ids).mean(dim=1, keepdim=True)
        hidden = self.word_embeddings(decoder_input_ids) + encoder_state
        ngram_hidden = torch.cat([stream(hidden) for stream in self.streams], dim=1)
        return hidden, ngram_hidden


class ProphetNetPreTrainedModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config

    def _shift_right(self, input_ids):
        decoder_start_token_id = self.config.decoder_start_token_id
        pad_token_id = self.config.pad_token_id

        assert decoder_start_token_id is not None, (
            "self.model.config.decoder_start_token_id has to be defined. In ProphetNet it is usually set to the"
            " pad_token_id. See ProphetNet docs for more information"
        )

        # shift inputs to the right
        shifted_input_ids = input_ids.new_zeros(input_ids.shape)
        shifted_input_ids[..., 1:] = input_ids[..., :-1].clone()
        shifted_input_ids[..., 0] = decoder_start_token_id

        assert pad_token_id is not None, "self.model.config.pad_token_id has to be defined."
        # replace possible -100 values in labels by `pad_token_id`
        shifted_input_ids.masked_fill_(shifted_input_ids == -100, pad_token_id)

        assert torch.all(shifted_input_ids >= 0).item(), "Verify that `shifted_input_ids` has only positive values"

        return shifted_input_ids


class ProphetNetForConditionalGeneration(ProphetNetPreTrainedModel):
    def __init__(self, config: ProphetNetConfig):
        super().__init__(config)
        self.prophetnet = TinyProphetNetModel(config)
        self.padding_idx = config.pad_token_id
        self.disable_ngram_loss = config.disable_ngram_loss

        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        decoder_input_ids: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        return_dict: bool | None = None,
    ):
        return_dict = return_dict if return_dict is not None else self.config.return_dict

        if labels is not None and decoder_input_ids is None and decoder_inputs_embeds is None:
            # get decoder inputs from shifting lm labels to the right
            decoder_input_ids = self._shift_right(labels)

        outputs = self.prophetnet(
            input_ids=input_ids,
            decoder_input_ids=decoder_input_ids,
            return_dict=return_dict,
        )
        batch_size, sequence_length = (
            decoder_input_ids.shape if decoder_input_ids is not None else decoder_inputs_embeds.shape[:2]
        )

        predicting_streams = outputs[1].view(batch_size, self.config.ngram, sequence_length, -1)
        predict_logits = self.lm_head(predicting_streams)

        logits = predict_logits[:, 0]
        logits_ngram = predict_logits[:, 1:] if self.config.ngram > 1 else None

        # To use .view in loss computation, make sure that logits is contiguous.
        if not logits.is_contiguous():
            logits = logits.contiguous()

        loss = None
        if labels is not None:
            loss = self._compute_loss(predict_logits, labels)

        all_logits = tuple(v for v in [logits, logits_ngram] if v is not None)
        return (loss,) + all_logits + outputs[2:] if loss is not None else all_logits + outputs[2:]

    def _compute_loss(self, logits, labels, ignore_index=-100):
        expend_targets = labels.new_zeros(self.config.ngram, labels.size(0), labels.size(1)).fill_(ignore_index)

        for i in range(self.config.ngram):
            if i > 0 and self.disable_ngram_loss:
                break
            expend_targets[i, :, :] = labels

        logits = logits.transpose(0, 1).contiguous()
        lprobs = nn.functional.log_softmax(
            logits.view(-1, logits.size(-1)),
            dim=-1,
            dtype=torch.float32,
        )

        loss = nn.functional.nll_loss(lprobs, expend_targets.view(-1), reduction="mean")

        if self.config.eps > 0.0:
            smooth_loss = -lprobs.sum(dim=-1, keepdim=True)
            non_masked_tokens = expend_targets.ne(ignore_index).view(-1)
            smooth_loss = smooth_loss[non_masked_tokens]
            smooth_loss = smooth_loss.mean()

            eps_i = self.config.eps / lprobs.size(-1)
            loss = (1.0 - self.config.eps) * loss + eps_i * smooth_loss

        return loss


def train_step(model, optimizer, batch):
    compiled = torch.compile(model)
    loss = compiled(**batch)[0]
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


def make():
    torch.manual_seed(0)
    model = ProphetNetForConditionalGeneration(ProphetNetConfig())
    input_ids = torch.randint(1, 11, (2, 5))
    labels = torch.randint(1, 11, (2, 4))
    labels[1, 2:] = -100
    decoder_input_ids = torch.randint(1, 11, (2, 4))
    return model, [(input_ids, None, None, labels), (input_ids, decoder_input_ids)]
