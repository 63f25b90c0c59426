"""DeepCTR-Torch variable-length sequence features: per feature, a fresh `SequencePoolingLayer` is built inside forward and pools the history embeddings (mean/sum/max) under a length mask or a `!= 0` mask, widened with `torch.repeat_interleave(mask, embedding_size, dim=2)`.

Source: shenweichen/DeepCTR-Torch@05d30f0235e98cef55ed500b35811d7c301d73ba:deepctr_torch/layers/sequence.py:5-74
Also: deepctr_torch/inputs.py (varlen_embedding_lookup, get_varlen_pooling_list: the
`feat.length_name is None` choice between the masking and the length path) and
deepctr_torch/models/basemodel.py input_from_feature_columns (feature_index slices of X).
Kept: SequencePoolingLayer verbatim (its FloatTensor eps, _sequence_mask with
`maxlen=None` default, mean/sum/max modes), the lookup and pooling helpers'
loops over VarLenSparseFeat columns, the X-column slicing by feature_index.
Simplified: VarLenSparseFeat is a small namedtuple; two sequence features; the
DNN on top is one linear layer; no dense/sparse single-value features.
"""
from collections import OrderedDict, namedtuple

import torch
import torch.nn as nn

VarLenSparseFeat = namedtuple(
    "VarLenSparseFeat", ["name", "vocabulary_size", "embedding_dim", "maxlen", "combiner", "length_name"])


class SequencePoolingLayer(nn.Module):
    """The SequencePoolingLayer is used to apply pooling operation(sum,mean,max) on variable-length sequence feature/multi-value feature."""

    def __init__(self, mode='mean', supports_masking=False):

        if mode not in ['sum', 'mean', 'max']:
            raise ValueError('parameter mode should in [sum, mean, max]')
        self.supports_masking = supports_masking
        self.mode = mode
        self.eps = torch.FloatTensor([1e-8])

        super(SequencePoolingLayer, self).__init__()

    def _sequence_mask(self, lengths, maxlen=None, dtype=torch.bool):
        # Returns a mask tensor representing the first N positions of each cell.
        if maxlen is None:
            maxlen = lengths.max()
        row_vector = torch.arange(0, maxlen, 1)
        matrix = torch.unsqueeze(lengths, dim=-1)
        mask = row_vector < matrix

        mask.type(dtype)
        return mask

    def forward(self, seq_value_len_list):
        if self.supports_masking:
            uiseq_embed_list, mask = seq_value_len_list  # [B, T, E], [B, 1]
            mask = mask.float()
            user_behavior_length = torch.sum(mask, dim=-1, keepdim=True)
            mask = mask.unsqueeze(2)
        else:
            uiseq_embed_list, user_behavior_length = seq_value_len_list  # [B, T, E], [B, 1]
            mask = self._sequence_mask(user_behavior_length, maxlen=uiseq_embed_list.shape[1],
                                       dtype=torch.float32)  # [B, 1, maxlen]
            mask = torch.transpose(mask, 1, 2)  # [B, maxlen, 1]

        embedding_size = uiseq_embed_list.shape[-1]

        mask = torch.repeat_interleave(mask, embedding_size, dim=2)  # [B, maxlen, E]

        if self.mode == 'max':
            hist = uiseq_embed_list - (1 - mask) * 1e9
            hist = torch.max(hist, dim=1, keepdim=True)[0]
            return hist
        hist = torch.sum(uiseq_embed_list * mask, dim=1, keepdim=False)

        if self.mode == 'mean':
            hist = torch.div(hist, user_behavior_length.type(torch.float32) + self.eps)

        hist = torch.unsqueeze(hist, dim=1)
        return hist


def varlen_embedding_lookup(X, embedding_dict, sequence_input_dict, varlen_sparse_feature_columns):
    varlen_embedding_vec_dict = {}
    for fc in varlen_sparse_feature_columns:
        feature_name = fc.name
        lookup_idx = sequence_input_dict[feature_name]
        varlen_embedding_vec_dict[feature_name] = embedding_dict[feature_name](
            X[:, lookup_idx[0]:lookup_idx[1]].long())  # (lookup_idx)

    return varlen_embedding_vec_dict


def get_varlen_pooling_list(embedding_dict, features, feature_index, varlen_sparse_feature_columns):
    varlen_sparse_embedding_list = []
    for feat in varlen_sparse_feature_columns:
        seq_emb = embedding_dict[feat.name]
        if feat.length_name is None:
            seq_mask = features[:, feature_index[feat.name][0]:feature_index[feat.name][1]].long() != 0

            emb = SequencePoolingLayer(mode=feat.combiner, supports_masking=True)(
                [seq_emb, seq_mask])
        else:
            seq_length = features[:, feature_index[feat.length_name][0]:feature_index[feat.length_name][1]].long()
            emb = SequencePoolingLayer(mode=feat.combiner, supports_masking=False)(
                [seq_emb, seq_length])
        varlen_sparse_embedding_list.append(emb)
    return varlen_sparse_embedding_list


def build_input_features(feature_columns):
    features = OrderedDict()
    start = 0
    for feat in feature_columns:
        features[feat.name] = (start, start + feat.maxlen)
        start += feat.maxlen
        if feat.length_name is not None and feat.length_name not in features:
            features[feat.length_name] = (start, start + 1)
            start += 1
    return features


class SeqPoolModel(nn.Module):
    def __init__(self, varlen_feature_columns):
        super().__init__()
        self.varlen_feature_columns = varlen_feature_columns
        self.feature_index = build_input_features(varlen_feature_columns)
        self.embedding_dict = nn.ModuleDict(
            {feat.name: nn.Embedding(feat.vocabulary_size, feat.embedding_dim) for feat in varlen_feature_columns})
        dim = sum(feat.embedding_dim for feat in varlen_feature_columns)
        self.dnn_linear = nn.Linear(dim, 1, bias=False)

    def input_from_feature_columns(self, X):
        sequence_embed_dict = varlen_embedding_lookup(X, self.embedding_dict, self.feature_index,
                                                      self.varlen_feature_columns)
        varlen_sparse_embedding_list = get_varlen_pooling_list(sequence_embed_dict, X, self.feature_index,
                                                               self.varlen_feature_columns)
        return varlen_sparse_embedding_list

    def forward(self, X):
        embedding_list = self.input_from_feature_columns(X)
        dnn_input = torch.flatten(torch.cat(embedding_list, dim=-1), start_dim=1)
        y_pred = torch.sigmoid(self.dnn_linear(dnn_input))
        return y_pred


COLUMNS = [
    VarLenSparseFeat("hist_item", 10, 4, 4, "mean", "seq_length"),
    VarLenSparseFeat("genres", 6, 4, 3, "max", None),
]


def make():
    torch.manual_seed(0)
    model = SeqPoolModel(COLUMNS)
    # columns: hist_item (4), seq_length (1), genres (3)
    X = torch.tensor([[3, 5, 0, 0, 2, 1, 4, 0],
                      [7, 1, 9, 2, 4, 2, 0, 0],
                      [1, 0, 0, 0, 1, 5, 5, 3]], dtype=torch.float32)
    return model, [(X,), (X[:1],)]


model = torch.compile(SeqPoolModel(COLUMNS))
