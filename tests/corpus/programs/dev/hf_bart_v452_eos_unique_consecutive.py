"""BART sequence classification at v4.52.4: `if len(torch.unique_consecutive(eos_mask.sum(1))) > 1: raise`, then `hidden[eos_mask, :]`.

Source: huggingface/transformers@v4.52.4:src/transformers/models/bart/modeling_bart.py:1796-1921
Kept: the eos_mask from config.eos_token_id, the unique_consecutive length
check raising ValueError, the boolean-mask read reshaped to (batch, -1, d)
and the last-eos pick, the classification head, the problem_type loss switch.
Simplified: the encoder-decoder is an embedding + linear; d_model 8, 3 labels.
"""
import torch
from torch import nn


class BartConfig:
    eos_token_id = 2
    d_model = 8
    num_labels = 3
    problem_type = None


class BartClassificationHead(nn.Module):
    def __init__(self, input_dim, inner_dim, num_classes):
        super().__init__()
        self.dense = nn.Linear(input_dim, inner_dim)
        self.out_proj = nn.Linear(inner_dim, num_classes)

    def forward(self, hidden_states):
        return self.out_proj(torch.tanh(self.dense(hidden_states)))


class BartForSequenceClassification(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.num_labels = config.num_labels
        self.model = nn.Sequential(nn.Embedding(10, config.d_model), nn.Linear(config.d_model, config.d_model))
        self.classification_head = BartClassificationHead(config.d_model, config.d_model, config.num_labels)

    def forward(self, input_ids, labels=None):
        outputs = (self.model(input_ids),)
        hidden_states = outputs[0]
        eos_mask = input_ids.eq(self.config.eos_token_id).to(hidden_states.device)
        if len(torch.unique_consecutive(eos_mask.sum(1))) > 1:
            raise ValueError("All examples must have the same number of <eos> tokens.")
        sentence_representation = hidden_states[eos_mask, :].view(hidden_states.size(0), -1, hidden_states.size(-1))[:, -1, :]
        logits = self.classification_head(sentence_representation)
        loss = None
        if labels is not None:
            if self.config.problem_type is None:
                if self.num_labels == 1:
                    self.config.problem_type = "regression"
                elif self.num_labels > 1 and (labels.dtype == torch.long or labels.dtype == torch.int):
                    self.config.problem_type = "single_label_classification"
                else:
                    self.config.problem_type = "multi_label_classification"
            if self.config.problem_type == "single_label_classification":
                loss = nn.functional.cross_entropy(logits.view(-1, self.num_labels), labels.view(-1))
        return (loss, logits) if loss is not None else (logits,)


model = torch.compile(BartForSequenceClassification(BartConfig()))

RAISING_INPUTS = {1: "ValueError"}


def make():
    torch.manual_seed(0)
    ok = torch.tensor([[0, 5, 6, 2], [0, 7, 2, 1]])
    uneven = torch.tensor([[0, 2, 6, 2], [0, 7, 2, 1]])
    return BartForSequenceClassification(BartConfig()), [(ok, torch.tensor([1, 2])), (uneven, None)]
