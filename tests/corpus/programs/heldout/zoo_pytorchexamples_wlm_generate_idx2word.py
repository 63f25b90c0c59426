"""pytorch/examples word language model sampling: each step runs the RNN, draws `word_idx = torch.multinomial(word_weights, 1)[0]`, feeds it back with `input.fill_(word_idx)`, looks the word up with `corpus.dictionary.idx2word[word_idx]` and writes/prints progress.

Source: pytorch/examples@01c54ac947b7e5c78ded229c171b8b282886be31:word_language_model/generate.py:44-66 (RNNModel from word_language_model/model.py, Dictionary from word_language_model/data.py)
Kept: the no_grad sampling loop with temperature, the write of every word
with a newline every 20, the log_interval print, RNNModel with its
LSTM/GRU/RNN_TANH choice, tied weights and init_hidden, Dictionary.
Simplified: no argparse, checkpoint or corpus files: a 6-word dictionary is
built in code and outf is an io.StringIO; the loop is a function taking
the model, corpus and args.
"""
import io
from argparse import Namespace

import torch
import torch.nn as nn
import torch.nn.functional as F


class Dictionary(object):
    def __init__(self):
        self.word2idx = {}
        self.idx2word = []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


class Corpus(object):
    def __init__(self, words):
        self.dictionary = Dictionary()
        for word in words:
            self.dictionary.add_word(word)


class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super(RNNModel, self).__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ['LSTM', 'GRU']:
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            try:
                nonlinearity = {'RNN_TANH': 'tanh', 'RNN_RELU': 'relu'}[rnn_type]
            except KeyError as e:
                raise ValueError("""An invalid option for `--model` was supplied,
                                 options are ['LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU']""") from e
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)

        if tie_weights:
            if nhid != ninp:
                raise ValueError('When using the tied flag, nhid must be equal to emsize')
            self.decoder.weight = self.encoder.weight

        self.init_weights()

        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == 'LSTM':
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        else:
            return weight.new_zeros(self.nlayers, bsz, self.nhid)


def generate(model, corpus, args, outf):
    ntokens = len(corpus.dictionary)
    hidden = model.init_hidden(1)
    input = torch.randint(ntokens, (1, 1), dtype=torch.long)

    with torch.no_grad():  # no tracking history
        for i in range(args.words):
            output, hidden = model(input, hidden)
            word_weights = output.squeeze().div(args.temperature).exp().cpu()
            word_idx = torch.multinomial(word_weights, 1)[0]
            input.fill_(word_idx)
            word = corpus.dictionary.idx2word[word_idx]

            outf.write(word + ('\n' if i % 20 == 19 else ' '))

            if i % args.log_interval == 0:
                print('| Generated {}/{} words'.format(i, args.words))
    return outf


fast_generate = torch.compile(generate)


def make():
    torch.manual_seed(0)
    corpus = Corpus("the cat sat on a mat".split())
    lstm = RNNModel('LSTM', len(corpus.dictionary), 4, 4, 2, dropout=0.2, tie_weights=True).eval()
    rnn = RNNModel('RNN_TANH', len(corpus.dictionary), 4, 6, 1).eval()
    return generate, [
        (lstm, corpus, Namespace(words=3, temperature=1.0, log_interval=2), io.StringIO()),
        (rnn, corpus, Namespace(words=21, temperature=0.5, log_interval=100), io.StringIO()),
    ]
