"""SLANet table-structure head: a greedy decode loop over `max_text_length + 1` steps that `break`s when
`torch.stack(structure_ids_list, dim=1).eq(out_channels - 1).any(-1).all()`.

Source: huggingface/transformers@v5.23.0:src/transformers/models/slanet/modeling_slanet.py:160-186 (the same loop is
in SLANeXt, modeling_slanext.py:589)
Census: penguinwu/oss-model-graph-break-corpus sweeps the document-layout models (PPDocLayout/SLANet family are
graph-break models in its results).
Kept: the one-hot feedback of predicted chars, the attention cell + generator step, argmax, the per-step lists,
the all-finished early stop, the softmax over stacked predictions.
Simplified: the attention cell is a Linear update over (features, mean context, one-hot); out_channels 4 (end
token 3), max_text_length 3; make() sets weights so positive context ends decoding at once.
"""
import torch
import torch.nn.functional as F
from torch import nn


class SLANetConfig:
    out_channels = 4
    max_text_length = 3
    hidden_size = 5


class StructureAttentionCell(nn.Module):
    def __init__(self, hidden, in_channels, num_embeddings):
        super().__init__()
        self.update = nn.Linear(hidden + in_channels + num_embeddings, hidden)

    def forward(self, features, hidden_states, embedding_feature):
        context = hidden_states.mean(dim=1)
        features = torch.tanh(self.update(torch.cat([features, context, embedding_feature], dim=-1)))
        return features, None


class SLANetSLAHead(nn.Module):
    def __init__(self, config, in_channels=3):
        super().__init__()
        self.config = config
        self.structure_attention_cell = StructureAttentionCell(config.hidden_size, in_channels, config.out_channels)
        self.structure_generator = nn.Linear(config.hidden_size, config.out_channels)

    def forward(self, hidden_states):
        batch_size = hidden_states.shape[0]
        features = torch.zeros(batch_size, self.config.hidden_size, device=hidden_states.device)
        predicted_chars = torch.zeros(batch_size, dtype=torch.long, device=hidden_states.device)

        structure_preds_list = []
        structure_ids_list = []
        for _ in range(self.config.max_text_length + 1):
            embedding_feature = F.one_hot(predicted_chars, self.config.out_channels).float()
            features, _ = self.structure_attention_cell(features, hidden_states.float(), embedding_feature)
            structure_step = self.structure_generator(features)
            predicted_chars = structure_step.argmax(dim=1)

            structure_preds_list.append(structure_step)
            structure_ids_list.append(predicted_chars)
            if torch.stack(structure_ids_list, dim=1).eq(self.config.out_channels - 1).any(-1).all():
                break
        structure_preds = F.softmax(torch.stack(structure_preds_list, dim=1), dim=-1, dtype=torch.float32).to(
            hidden_states.dtype
        )
        return structure_preds


head = torch.compile(SLANetSLAHead(SLANetConfig()).eval())


def make():
    torch.manual_seed(0)
    model = SLANetSLAHead(SLANetConfig()).eval()
    with torch.no_grad():
        # deterministic weights: the end token wins exactly when the image context is positive
        cell = model.structure_attention_cell.update
        cell.weight.zero_()
        cell.bias.zero_()
        hidden = SLANetConfig.hidden_size
        cell.weight[:, hidden:hidden + 3] = 1.0
        model.structure_generator.weight.zero_()
        model.structure_generator.bias.zero_()
        model.structure_generator.weight[3] = 5.0
    return model, [(torch.full((2, 6, 3), 2.0),), (torch.full((2, 6, 3), -2.0),)]
