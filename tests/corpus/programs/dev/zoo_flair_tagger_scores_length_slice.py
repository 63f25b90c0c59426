"""flair SequenceTagger.forward without a CRF: embeddings go through `pack_padded_sequence` and a bidirectional `nn.LSTM`, then `_get_scores_from_features` trims each sentence with `feat[:length]` for `length` drawn from the `lengths` tensor.

Source: flairNLP/flair@d4ea3777998ba67bfbe6b6b8359e024dcf673c3e:flair/models/sequence_tagger_model.py:36-400
Also: flair/nn/dropout.py (LockedDropout, WordDropout), flair/models/sequence_tagger_utils/crf.py (CRF).
Kept: the constructor's dropout/reprojection/RNN plumbing (the static RNN()
factory with getattr(torch.nn, rnn_type), train_initial_hidden_state),
forward and _get_scores_from_features verbatim, both dropout modules.
Simplified: the Dictionary is a small stand-in (items, start/stop tags), the
embeddings are passed as a ready (batch, len, 6) tensor with its lengths as
_prepare_tensors builds them; use_crf=False (the TokenClassifier-style
configuration); hidden size 4, 5 BIOES tags.
"""
import logging
from typing import Optional

import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

log = logging.getLogger("flair")

START_TAG: str = "<START>"
STOP_TAG: str = "<STOP>"


class LockedDropout(torch.nn.Module):
    def __init__(self, dropout_rate=0.5, batch_first=True, inplace=False) -> None:
        super().__init__()
        self.dropout_rate = dropout_rate
        self.batch_first = batch_first
        self.inplace = inplace

    def forward(self, x):
        if not self.training or not self.dropout_rate:
            return x

        if not self.batch_first:
            m = x.data.new(1, x.size(1), x.size(2)).bernoulli_(1 - self.dropout_rate)
        else:
            m = x.data.new(x.size(0), 1, x.size(2)).bernoulli_(1 - self.dropout_rate)

        mask = torch.autograd.Variable(m, requires_grad=False) / (1 - self.dropout_rate)
        mask = mask.expand_as(x)
        return mask * x


class WordDropout(torch.nn.Module):
    def __init__(self, dropout_rate=0.05, inplace=False) -> None:
        super().__init__()
        self.dropout_rate = dropout_rate
        self.inplace = inplace

    def forward(self, x):
        if not self.training or not self.dropout_rate:
            return x

        m = x.data.new(x.size(0), x.size(1), 1).bernoulli_(1 - self.dropout_rate)

        mask = torch.autograd.Variable(m, requires_grad=False)
        return mask * x


class Dictionary:
    def __init__(self, items):
        self.item2idx = {item: i for i, item in enumerate(items)}

    def __len__(self):
        return len(self.item2idx)

    def get_items(self):
        return list(self.item2idx)

    def get_idx_for_item(self, item):
        return self.item2idx[item]

    def start_stop_tags_are_set(self):
        return START_TAG in self.item2idx and STOP_TAG in self.item2idx


class SequenceTagger(torch.nn.Module):
    def __init__(
        self,
        embedding_length: int,
        tag_dictionary: Dictionary,
        tag_type: str,
        use_rnn: bool = True,
        rnn: Optional[torch.nn.RNN] = None,
        rnn_type: str = "LSTM",
        hidden_size: int = 256,
        rnn_layers: int = 1,
        bidirectional: bool = True,
        use_crf: bool = True,
        reproject_embeddings: bool = True,
        dropout: float = 0.0,
        word_dropout: float = 0.05,
        locked_dropout: float = 0.5,
        train_initial_hidden_state: bool = False,
    ) -> None:
        super().__init__()
        self.tag_type = tag_type
        self.label_dictionary = tag_dictionary
        self.tagset_size = len(self.label_dictionary)
        log.info(f"- Predicts {len(self.label_dictionary)} classes: {self.label_dictionary.get_items()[:20]}")

        embedding_dim: int = embedding_length

        # ----- RNN specific parameters -----
        self.use_rnn = use_rnn
        self.rnn_type = rnn_type if not rnn else rnn._get_name()
        self.hidden_size = hidden_size if not rnn else rnn.hidden_size
        self.rnn_layers = rnn_layers if not rnn else rnn.num_layers
        self.bidirectional = bidirectional if not rnn else rnn.bidirectional

        self.use_crf = use_crf

        # remove word dropout if there is no contact over the sequence dimension.
        if not use_crf and not use_rnn:
            word_dropout = 0.0

        self.use_dropout: float = dropout
        self.use_word_dropout: float = word_dropout
        self.use_locked_dropout: float = locked_dropout

        if dropout > 0.0:
            self.dropout = torch.nn.Dropout(dropout)

        if word_dropout > 0.0:
            self.word_dropout = WordDropout(word_dropout)

        if locked_dropout > 0.0:
            self.locked_dropout = LockedDropout(locked_dropout)

        # ----- Model layers -----
        self.reproject_embeddings = reproject_embeddings
        if self.reproject_embeddings:
            self.embedding2nn = torch.nn.Linear(embedding_dim, embedding_dim)

        # ----- RNN layer -----
        if use_rnn:
            # If shared RNN provided, else create one for model
            self.rnn: torch.nn.RNN = (
                rnn
                if rnn
                else self.RNN(
                    rnn_type,
                    rnn_layers,
                    hidden_size,
                    bidirectional,
                    rnn_input_dim=embedding_dim,
                )
            )

            num_directions = 2 if self.bidirectional else 1
            hidden_output_dim = self.rnn.hidden_size * num_directions

            # Whether to train initial hidden state
            self.train_initial_hidden_state = train_initial_hidden_state
            if self.train_initial_hidden_state:
                (
                    self.hs_initializer,
                    self.lstm_init_h,
                    self.lstm_init_c,
                ) = self._init_initial_hidden_state(num_directions)

            # final linear map to tag space
            self.linear = torch.nn.Linear(hidden_output_dim, len(self.label_dictionary))
        else:
            self.linear = torch.nn.Linear(embedding_dim, len(self.label_dictionary))
            self.train_initial_hidden_state = False

        if use_crf:
            raise NotImplementedError("the CRF head is not part of this program")

    def _init_initial_hidden_state(self, num_directions: int):
        hs_initializer = torch.nn.init.xavier_normal_
        lstm_init_h = torch.nn.Parameter(
            torch.randn(self.rnn.num_layers * num_directions, self.hidden_size),
            requires_grad=True,
        )
        lstm_init_c = torch.nn.Parameter(
            torch.randn(self.rnn.num_layers * num_directions, self.hidden_size),
            requires_grad=True,
        )

        return hs_initializer, lstm_init_h, lstm_init_c

    @staticmethod
    def RNN(
        rnn_type: str,
        rnn_layers: int,
        hidden_size: int,
        bidirectional: bool,
        rnn_input_dim: int,
    ) -> torch.nn.RNN:
        if rnn_type in ["LSTM", "GRU", "RNN"]:
            RNN = getattr(torch.nn, rnn_type)(
                rnn_input_dim,
                hidden_size,
                num_layers=rnn_layers,
                dropout=0.0 if rnn_layers == 1 else 0.5,
                bidirectional=bidirectional,
                batch_first=True,
            )
        else:
            raise Exception(f"Unknown RNN type: {rnn_type}. Please use either LSTM, GRU or RNN.")

        return RNN

    def forward(self, sentence_tensor: torch.Tensor, lengths: torch.LongTensor):
        if self.use_dropout:
            sentence_tensor = self.dropout(sentence_tensor)
        if self.use_word_dropout:
            sentence_tensor = self.word_dropout(sentence_tensor)
        if self.use_locked_dropout:
            sentence_tensor = self.locked_dropout(sentence_tensor)

        if self.reproject_embeddings:
            sentence_tensor = self.embedding2nn(sentence_tensor)

        if self.use_rnn:
            packed = pack_padded_sequence(sentence_tensor, lengths, batch_first=True)
            rnn_output, hidden = self.rnn(packed)
            sentence_tensor, output_lengths = pad_packed_sequence(rnn_output, batch_first=True)

        if self.use_dropout:
            sentence_tensor = self.dropout(sentence_tensor)
        if self.use_locked_dropout:
            sentence_tensor = self.locked_dropout(sentence_tensor)

        # linear map to tag space
        features = self.linear(sentence_tensor)

        if self.use_crf:
            raise NotImplementedError("the CRF head is not part of this program")
        else:
            scores = self._get_scores_from_features(features, lengths)

        return scores

    @staticmethod
    def _get_scores_from_features(features: torch.Tensor, lengths: torch.Tensor):
        features_formatted = []
        for feat, length in zip(features, lengths):
            features_formatted.append(feat[:length])
        scores = torch.cat(features_formatted)

        return scores


def build_tagger() -> SequenceTagger:
    tags = Dictionary(["O", "S-PER", "B-PER", "E-PER", "I-PER"])
    return SequenceTagger(6, tags, "ner", hidden_size=4, use_crf=False, dropout=0.1)


tagger = torch.compile(build_tagger().eval())


def make():
    torch.manual_seed(0)
    sentences = torch.randn(3, 5, 6)
    sentences[1, 4:] = 0
    sentences[2, 2:] = 0
    return build_tagger().eval(), [
        (sentences, torch.LongTensor([5, 4, 2])),
        (sentences[:1], torch.LongTensor([5])),
    ]
