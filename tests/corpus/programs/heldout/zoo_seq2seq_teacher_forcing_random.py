"""Seq2seq tutorial 1 (bentrevett): 2-layer LSTM encoder/decoder; the decoding loop picks `trg[t] if teacher_force else top1` where `teacher_force = random.random() < teacher_forcing_ratio`.

Source: bentrevett/pytorch-seq2seq@074bc54545d286cfebaa1abd43525d6e0d91307a:1 - Sequence to Sequence Learning with Neural Networks.ipynb (cells 12-15, 19)
Kept: Encoder, Decoder and Seq2Seq verbatim (the hid_dim/n_layers asserts, the
`outputs` buffer on self.device, `output.max(1)[1]`), the model built as in cell 15
and evaluate()'s `model(src, trg, 0)` call.
Simplified: vocabularies of 11/13 tokens, embedding 8, hidden 16; no torchtext.
"""
import random

import torch
import torch.nn as nn

device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')


class Encoder(nn.Module):
    def __init__(self, input_dim, emb_dim, hid_dim, n_layers, dropout):
        super().__init__()

        self.input_dim = input_dim
        self.emb_dim = emb_dim
        self.hid_dim = hid_dim
        self.n_layers = n_layers
        self.dropout = dropout

        self.embedding = nn.Embedding(input_dim, emb_dim)

        self.rnn = nn.LSTM(emb_dim, hid_dim, n_layers, dropout=dropout)

        self.dropout = nn.Dropout(dropout)

    def forward(self, src):

        #src = [sent len, batch size]

        embedded = self.dropout(self.embedding(src))

        #embedded = [sent len, batch size, emb dim]

        outputs, (hidden, cell) = self.rnn(embedded)

        #outputs are always from the top hidden layer

        return hidden, cell


class Decoder(nn.Module):
    def __init__(self, output_dim, emb_dim, hid_dim, n_layers, dropout):
        super().__init__()

        self.emb_dim = emb_dim
        self.hid_dim = hid_dim
        self.output_dim = output_dim
        self.n_layers = n_layers
        self.dropout = dropout

        self.embedding = nn.Embedding(output_dim, emb_dim)

        self.rnn = nn.LSTM(emb_dim, hid_dim, n_layers, dropout=dropout)

        self.out = nn.Linear(hid_dim, output_dim)

        self.dropout = nn.Dropout(dropout)

    def forward(self, input, hidden, cell):

        input = input.unsqueeze(0)

        #input = [1, batch size]

        embedded = self.dropout(self.embedding(input))

        #embedded = [1, batch size, emb dim]

        output, (hidden, cell) = self.rnn(embedded, (hidden, cell))

        prediction = self.out(output.squeeze(0))

        #prediction = [batch size, output dim]

        return prediction, hidden, cell


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder, device):
        super().__init__()

        self.encoder = encoder
        self.decoder = decoder
        self.device = device

        assert encoder.hid_dim == decoder.hid_dim, "Hidden dimensions of encoder and decoder must be equal!"
        assert encoder.n_layers == decoder.n_layers, "Encoder and decoder must have equal number of layers!"

    def forward(self, src, trg, teacher_forcing_ratio=0.5):

        #src = [sent len, batch size]
        #trg = [sent len, batch size]
        #teacher_forcing_ratio is probability to use teacher forcing
        #e.g. if teacher_forcing_ratio is 0.75 we use ground-truth inputs 75% of the time

        batch_size = trg.shape[1]
        max_len = trg.shape[0]
        trg_vocab_size = self.decoder.output_dim

        #tensor to store decoder outputs
        outputs = torch.zeros(max_len, batch_size, trg_vocab_size).to(self.device)

        #last hidden state of the encoder is used as the initial hidden state of the decoder
        hidden, cell = self.encoder(src)

        #first input to the decoder is the <sos> tokens
        input = trg[0,:]

        for t in range(1, max_len):

            output, hidden, cell = self.decoder(input, hidden, cell)
            outputs[t] = output
            teacher_force = random.random() < teacher_forcing_ratio
            top1 = output.max(1)[1]
            input = (trg[t] if teacher_force else top1)

        return outputs


INPUT_DIM = 11
OUTPUT_DIM = 13
ENC_EMB_DIM = 8
DEC_EMB_DIM = 8
HID_DIM = 16
N_LAYERS = 2
ENC_DROPOUT = 0.5
DEC_DROPOUT = 0.5


def build_model():
    enc = Encoder(INPUT_DIM, ENC_EMB_DIM, HID_DIM, N_LAYERS, ENC_DROPOUT)
    dec = Decoder(OUTPUT_DIM, DEC_EMB_DIM, HID_DIM, N_LAYERS, DEC_DROPOUT)
    return Seq2Seq(enc, dec, device).to(device)


def evaluate(model, batches):
    model.eval()
    compiled = torch.compile(model)
    with torch.no_grad():
        return [compiled(src, trg, 0) for src, trg in batches]  # turn off teacher forcing


def make():
    torch.manual_seed(0)
    src = torch.randint(0, INPUT_DIM, (5, 2))
    trg = torch.randint(0, OUTPUT_DIM, (4, 2))
    model = build_model()
    model.eval()
    return model, [(src, trg, 0), (src, trg, 1.0), (src, trg)]
