"""Attention OCR training batch: CNN + BiLSTM encoder, GRU attention decoder (decoderV2) unrolled per character, teacher forcing chosen by `random.random() > teach_forcing_prob`, greedy `topk(1)` feedback otherwise.

Source: chenjun2hao/Attention_ocr.pytorch@0a813a95d71563775d684fc7740cb0ec1646ebec:train.py:trainBatch
Model: models/crnn_lang.py (BidirectionalLSTM, CNN, AttentiondecoderV2, decoderV2)
Kept: trainBatch's body from the encoder call on (decoder_input from
target_variable[0], initHidden, the random teacher-forcing choice, both
decoding loops with `loss += criterion(...)` per step, `.data.topk(1)` and
`topi.squeeze()`, zero_grad on both modules, backward, `return loss`);
the model classes as written (`Variable` in initHidden).
Simplified: the data iterator, converter.encode and utils.loadData are
replaced by passing the image and the encoded target tensor; `.cuda()`
calls dropped; CNN widths shrunk (64..512 -> 4..16), nh 8, 7 classes,
a 32x16 image batch of 2, 4 target steps. The two Adam `.step()` calls are
left to the caller (tracing them dominated the compile time), so the
optimizers are not arguments.
"""
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable


class BidirectionalLSTM(nn.Module):

    def __init__(self, nIn, nHidden, nOut):
        super(BidirectionalLSTM, self).__init__()

        self.rnn = nn.LSTM(nIn, nHidden, bidirectional=True)
        self.embedding = nn.Linear(nHidden * 2, nOut)

    def forward(self, input):
        recurrent, _ = self.rnn(input)
        T, b, h = recurrent.size()
        t_rec = recurrent.view(T * b, h)

        output = self.embedding(t_rec)  # [T * b, nOut]
        output = output.view(T, b, -1)

        return output


class CNN(nn.Module):
    '''
        CNN+BiLstm does feature extraction
    '''
    def __init__(self, imgH, nc, nh):
        super(CNN, self).__init__()
        assert imgH % 16 == 0, 'imgH has to be a multiple of 16'

        self.cnn = nn.Sequential(
                      nn.Conv2d(nc, 4, 3, 1, 1), nn.ReLU(True), nn.MaxPool2d(2, 2),
                      nn.Conv2d(4, 8, 3, 1, 1), nn.ReLU(True), nn.MaxPool2d(2, 2),
                      nn.Conv2d(8, 8, 3, 1, 1), nn.BatchNorm2d(8), nn.ReLU(True),
                      nn.Conv2d(8, 8, 3, 1, 1), nn.ReLU(True), nn.MaxPool2d((2,2), (2,1), (0,1)),
                      nn.Conv2d(8, 16, 3, 1, 1), nn.BatchNorm2d(16), nn.ReLU(True),
                      nn.Conv2d(16, 16, 3, 1, 1), nn.ReLU(True), nn.MaxPool2d((2,2), (2,1), (0,1)),
                      nn.Conv2d(16, 16, 2, 1, 0), nn.BatchNorm2d(16), nn.ReLU(True))
        self.rnn = nn.Sequential(
            BidirectionalLSTM(16, nh, nh),
            BidirectionalLSTM(nh, nh, nh))

    def forward(self, input):
        # conv features
        conv = self.cnn(input)
        b, c, h, w = conv.size()
        assert h == 1, "the height of conv must be 1"
        conv = conv.squeeze(2)
        conv = conv.permute(2, 0, 1)  # [w, b, c]

        # rnn features calculate
        encoder_outputs = self.rnn(conv)

        return encoder_outputs


class AttentiondecoderV2(nn.Module):
    def __init__(self, hidden_size, output_size, dropout_p=0.1):
        super(AttentiondecoderV2, self).__init__()
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.dropout_p = dropout_p

        self.embedding = nn.Embedding(self.output_size, self.hidden_size)
        self.attn_combine = nn.Linear(self.hidden_size * 2, self.hidden_size)
        self.dropout = nn.Dropout(self.dropout_p)
        self.gru = nn.GRU(self.hidden_size, self.hidden_size)
        self.out = nn.Linear(self.hidden_size, self.output_size)

        # test
        self.vat = nn.Linear(hidden_size, 1)

    def forward(self, input, hidden, encoder_outputs):
        embedded = self.embedding(input)         # Word embedding on the previous output
        embedded = self.dropout(embedded)

        # test
        batch_size = encoder_outputs.shape[1]
        alpha = hidden + encoder_outputs
        alpha = alpha.view(-1, alpha.shape[-1])
        attn_weights = self.vat( torch.tanh(alpha))
        attn_weights = attn_weights.view(-1, 1, batch_size).permute((2,1,0))
        attn_weights = F.softmax(attn_weights, dim=2)

        attn_applied = torch.matmul(attn_weights,
                                 encoder_outputs.permute((1, 0, 2)))
        output = torch.cat((embedded, attn_applied.squeeze(1) ), 1)
        output = self.attn_combine(output).unsqueeze(0)

        output = F.relu(output)
        output, hidden = self.gru(output, hidden)

        output = F.log_softmax(self.out(output[0]), dim=1)          # Finally output a probability
        return output, hidden, attn_weights

    def initHidden(self, batch_size):
        result = Variable(torch.zeros(1, batch_size, self.hidden_size))

        return result


class decoderV2(nn.Module):
    '''
        decoder from image features
    '''

    def __init__(self, nh=256, nclass=13, dropout_p=0.1):
        super(decoderV2, self).__init__()
        self.hidden_size = nh
        self.decoder = AttentiondecoderV2(nh, nclass, dropout_p)

    def forward(self, input, hidden, encoder_outputs):
        return self.decoder(input, hidden, encoder_outputs)

    def initHidden(self, batch_size):
        result = Variable(torch.zeros(1, batch_size, self.hidden_size))
        return result


@torch.compile
def trainBatch(encoder, decoder, criterion, image, target_variable, teach_forcing_prob=1):
    '''
        target_label:Use post-processing to encode and align for batch training
    '''
    b = image.size(0)

    encoder_outputs = encoder(image)  # cnn+biLstm for feature extraction
    decoder_input = target_variable[0]  # Initialize the beginning of the decoder, start output from 0
    decoder_hidden = decoder.initHidden(b)
    loss = 0.0
    teach_forcing = True if random.random() > teach_forcing_prob else False
    if teach_forcing:
        # Teacher Mandatory: Use the target label as the next input
        for di in range(1, target_variable.shape[0]):  # Maximum string length
            decoder_output, decoder_hidden, decoder_attention = decoder(
                decoder_input, decoder_hidden, encoder_outputs)
            loss += criterion(decoder_output, target_variable[di])  # Predict one character at a time
            decoder_input = target_variable[di]  # Teacher forcing/Previous output
    else:
        for di in range(1, target_variable.shape[0]):
            decoder_output, decoder_hidden, decoder_attention = decoder(
                decoder_input, decoder_hidden, encoder_outputs)
            loss += criterion(decoder_output, target_variable[di])  # Predict one character at a time
            topv, topi = decoder_output.data.topk(1)
            ni = topi.squeeze()
            decoder_input = ni
    encoder.zero_grad()
    decoder.zero_grad()
    loss.backward()
    return loss


def make():
    torch.manual_seed(0)
    SOS_token, EOS_TOKEN = 0, 1
    nclass = 7
    encoder = CNN(32, 1, 8)
    decoder = decoderV2(8, nclass, dropout_p=0.1)
    encoder.train()
    decoder.train()
    criterion = torch.nn.NLLLoss()
    image = torch.randn(2, 1, 32, 16)
    # (num_steps + 2) x batch: SOS, two characters, EOS
    target_variable = torch.tensor([[SOS_token, SOS_token], [3, 5], [4, 6], [EOS_TOKEN, EOS_TOKEN]])
    args = (encoder, decoder, criterion, image, target_variable)
    # random.random() > 0.0: teacher forcing; random.random() > 1.0 never: greedy feedback
    return trainBatch._torchdynamo_orig_callable, [args + (0.0,), args + (1.0,)]
