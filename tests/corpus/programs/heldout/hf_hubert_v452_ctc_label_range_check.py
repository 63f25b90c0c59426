"""HuBERT/Wav2Vec2 CTC head at v4.52.4: `if labels is not None and labels.max() >= self.config.vocab_size: raise ValueError`, masked_select targets, ctc_loss.

Source: huggingface/transformers@v4.52.4:src/transformers/models/hubert/modeling_hubert.py:1338-1406
Kept: the label range check, the encoder call, dropout and lm_head, the loss
block (ones_like default mask, _get_feat_extract_output_lengths, labels >= 0
mask, target lengths, masked_select of flattened targets, log_softmax in
float32 transposed, the cudnn flags context and nn.functional.ctc_loss with
config blank / reduction / zero_infinity).
Simplified: the encoder is a strided conv with floor-division output lengths;
vocab 6.
"""
import torch
from torch import nn


class HubertConfig:
    vocab_size = 6
    pad_token_id = 0
    ctc_loss_reduction = "mean"
    ctc_zero_infinity = True
    use_return_dict = False


class HubertForCTC(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.hubert = nn.Conv1d(1, 8, 4, stride=2)
        self.dropout = nn.Dropout(0.0)
        self.lm_head = nn.Linear(8, config.vocab_size)

    def _get_feat_extract_output_lengths(self, input_lengths):
        return torch.div(input_lengths - 4, 2, rounding_mode="floor") + 1

    def forward(self, input_values, attention_mask=None, labels=None):
        if labels is not None and labels.max() >= self.config.vocab_size:
            raise ValueError(f"Label values must be <= vocab_size: {self.config.vocab_size}")
        outputs = (self.hubert(input_values[:, None]).transpose(1, 2),)
        hidden_states = outputs[0]
        hidden_states = self.dropout(hidden_states)
        logits = self.lm_head(hidden_states)
        loss = None
        if labels is not None:
            attention_mask = attention_mask if attention_mask is not None else torch.ones_like(input_values, dtype=torch.long)
            input_lengths = self._get_feat_extract_output_lengths(attention_mask.sum(-1)).to(torch.long)
            labels_mask = labels >= 0
            target_lengths = labels_mask.sum(-1)
            flattened_targets = labels.masked_select(labels_mask)
            log_probs = nn.functional.log_softmax(logits, dim=-1, dtype=torch.float32).transpose(0, 1)
            with torch.backends.cudnn.flags(enabled=False):
                loss = nn.functional.ctc_loss(log_probs, flattened_targets, input_lengths, target_lengths,
                                              blank=self.config.pad_token_id, reduction=self.config.ctc_loss_reduction,
                                              zero_infinity=self.config.ctc_zero_infinity)
        return (loss, logits) if loss is not None else (logits,)


model = torch.compile(HubertForCTC(HubertConfig()).train())

RAISING_INPUTS = {2: "ValueError"}


def make():
    torch.manual_seed(0)
    wav = torch.randn(2, 20)
    return HubertForCTC(HubertConfig()).train(), [(wav,), (wav, None, torch.tensor([[1, 2, 3], [4, 5, -100]])), (wav, None, torch.tensor([[1, 7, 3], [4, 5, -100]]))]
