"""ConvE knowledge-graph scorer: embeddings reshaped with the global `Config.batch_size`, conv/BN/dropout stack, scores against every entity.

Source: TimDettmers/ConvE@2a2e096aa9b14672aef7ec9c7c21522248e7f7e7:model.py:83-127
Kept: the spodernet-style global `Config` class read inside forward
(`Config.batch_size`, `Config.embedding_dim`, dropouts, `use_bias`), the
hard-coded `.view(Config.batch_size, 1, 4, 8)` stacking, the BCELoss attribute,
`init()` with xavier_normal_, the `print` in __init__, `x += self.b.expand_as(x)`.
Simplified: spodernet Config replaced by a plain class with the same attributes;
20 entities, 6 relations, batch size 4; no CUDATimer.
"""
import torch
from torch.nn import functional as F, Parameter
from torch.nn.init import xavier_normal_


class Config:
    batch_size = 4
    embedding_dim = 32
    input_dropout = 0.2
    dropout = 0.3
    feature_map_dropout = 0.2
    use_bias = True


class ConvE(torch.nn.Module):
    def __init__(self, num_entities, num_relations):
        super(ConvE, self).__init__()
        self.emb_e = torch.nn.Embedding(num_entities, Config.embedding_dim, padding_idx=0)
        self.emb_rel = torch.nn.Embedding(num_relations, Config.embedding_dim, padding_idx=0)
        self.inp_drop = torch.nn.Dropout(Config.input_dropout)
        self.hidden_drop = torch.nn.Dropout(Config.dropout)
        self.feature_map_drop = torch.nn.Dropout2d(Config.feature_map_dropout)
        self.loss = torch.nn.BCELoss()

        self.conv1 = torch.nn.Conv2d(1, 32, (3, 3), 1, 0, bias=Config.use_bias)
        self.bn0 = torch.nn.BatchNorm2d(1)
        self.bn1 = torch.nn.BatchNorm2d(32)
        self.bn2 = torch.nn.BatchNorm1d(Config.embedding_dim)
        self.register_parameter('b', Parameter(torch.zeros(num_entities)))
        self.fc = torch.nn.Linear(1152, Config.embedding_dim)
        print(num_entities, num_relations)

    def init(self):
        xavier_normal_(self.emb_e.weight.data)
        xavier_normal_(self.emb_rel.weight.data)

    def forward(self, e1, rel):
        e1_embedded = self.emb_e(e1).view(Config.batch_size, 1, 4, 8)
        rel_embedded = self.emb_rel(rel).view(Config.batch_size, 1, 4, 8)

        stacked_inputs = torch.cat([e1_embedded, rel_embedded], 2)

        stacked_inputs = self.bn0(stacked_inputs)
        x = self.inp_drop(stacked_inputs)
        x = self.conv1(x)
        x = self.bn1(x)
        x = F.relu(x)
        x = self.feature_map_drop(x)
        x = x.view(Config.batch_size, -1)
        x = self.fc(x)
        x = self.hidden_drop(x)
        x = self.bn2(x)
        x = F.relu(x)
        x = torch.mm(x, self.emb_e.weight.transpose(1, 0))
        x += self.b.expand_as(x)
        pred = F.sigmoid(x)

        return pred


def main(num_entities=20, num_relations=6):
    model = ConvE(num_entities, num_relations)
    model.init()
    model = torch.compile(model)
    return model


def make():
    torch.manual_seed(0)
    model = ConvE(20, 6)
    model.init()
    e1 = torch.tensor([[1], [5], [7], [19]])
    rel = torch.tensor([[1], [2], [3], [5]])
    return model, [(e1, rel)]
