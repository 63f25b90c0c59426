"""ASTER text recognizer training step: attention GRU decoder with teacher forcing over `max(lengths)` steps, then the sequence cross-entropy loss that builds its mask in a Python loop over `length[i]`.

Source: ayumiymk/aster.pytorch@be670046c775b54de79766208f0c59321ae1eccf:lib/models/attention_recognition_head.py:11-42,187-263
Also: lib/models/model_builder.py:63-102 (ModelBuilder.forward, training branch) and
lib/loss/sequenceCrossEntropyLoss.py:8-64 (SequenceCrossEntropyLoss verbatim).
Kept: AttentionRecognitionHead.forward (the `x, targets, lengths = x` list input,
`for i in range(max(lengths))`, the `<BOS>` fill), AttentionUnit and DecoderUnit
(nn.GRU step per character), the loss (`_assert_no_grad`, per-sample mask fill,
`assert max_length == input.size(1)`), the return_dict plumbing and the
`v.unsqueeze(0)` loop of ModelBuilder.forward.
Simplified: the ResNet+BiLSTM encoder and the STN rectification are dropped;
the model takes encoder features directly (b x 6 x 8); 5 classes, sDim 8, attDim 8.
"""
import torch
from torch import nn
from torch.nn import functional as F


def to_contiguous(tensor):
    if tensor.is_contiguous():
        return tensor
    else:
        return tensor.contiguous()


def _assert_no_grad(variable):
    assert not variable.requires_grad, \
        "nn criterions don't compute the gradient w.r.t. targets - please " \
        "mark these variables as not requiring gradients"


class SequenceCrossEntropyLoss(nn.Module):
    def __init__(self,
                 weight=None,
                 size_average=True,
                 ignore_index=-100,
                 sequence_normalize=False,
                 sample_normalize=True):
        super(SequenceCrossEntropyLoss, self).__init__()
        self.weight = weight
        self.size_average = size_average
        self.ignore_index = ignore_index
        self.sequence_normalize = sequence_normalize
        self.sample_normalize = sample_normalize

        assert (sequence_normalize and sample_normalize) == False

    def forward(self, input, target, length):
        _assert_no_grad(target)
        # length to mask
        batch_size, def_max_length = target.size(0), target.size(1)
        mask = torch.zeros(batch_size, def_max_length)
        for i in range(batch_size):
            mask[i, :length[i]].fill_(1)
        mask = mask.type_as(input)
        # truncate to the same size
        max_length = max(length)
        assert max_length == input.size(1)
        target = target[:, :max_length]
        mask = mask[:, :max_length]
        input = to_contiguous(input).view(-1, input.size(2))
        input = F.log_softmax(input, dim=1)
        target = to_contiguous(target).view(-1, 1)
        mask = to_contiguous(mask).view(-1, 1)
        output = - input.gather(1, target.long()) * mask
        output = torch.sum(output)
        if self.sequence_normalize:
            output = output / torch.sum(mask)
        if self.sample_normalize:
            output = output / batch_size

        return output


class AttentionUnit(nn.Module):
    def __init__(self, sDim, xDim, attDim):
        super(AttentionUnit, self).__init__()

        self.sDim = sDim
        self.xDim = xDim
        self.attDim = attDim

        self.sEmbed = nn.Linear(sDim, attDim)
        self.xEmbed = nn.Linear(xDim, attDim)
        self.wEmbed = nn.Linear(attDim, 1)

    def forward(self, x, sPrev):
        batch_size, T, _ = x.size()                      # [b x T x xDim]
        x = x.view(-1, self.xDim)                        # [(b x T) x xDim]
        xProj = self.xEmbed(x)                           # [(b x T) x attDim]
        xProj = xProj.view(batch_size, T, -1)            # [b x T x attDim]

        sPrev = sPrev.squeeze(0)
        sProj = self.sEmbed(sPrev)                       # [b x attDim]
        sProj = torch.unsqueeze(sProj, 1)                # [b x 1 x attDim]
        sProj = sProj.expand(batch_size, T, self.attDim)  # [b x T x attDim]

        sumTanh = torch.tanh(sProj + xProj)
        sumTanh = sumTanh.view(-1, self.attDim)

        vProj = self.wEmbed(sumTanh)  # [(b x T) x 1]
        vProj = vProj.view(batch_size, T)

        alpha = F.softmax(vProj, dim=1)  # attention weights for each sample in the minibatch

        return alpha


class DecoderUnit(nn.Module):
    def __init__(self, sDim, xDim, yDim, attDim):
        super(DecoderUnit, self).__init__()
        self.sDim = sDim
        self.xDim = xDim
        self.yDim = yDim
        self.attDim = attDim
        self.emdDim = attDim

        self.attention_unit = AttentionUnit(sDim, xDim, attDim)
        self.tgt_embedding = nn.Embedding(yDim + 1, self.emdDim)  # the last is used for <BOS>
        self.gru = nn.GRU(input_size=xDim + self.emdDim, hidden_size=sDim, batch_first=True)
        self.fc = nn.Linear(sDim, yDim)

    def forward(self, x, sPrev, yPrev):
        # x: feature sequence from the image decoder.
        batch_size, T, _ = x.size()
        alpha = self.attention_unit(x, sPrev)
        context = torch.bmm(alpha.unsqueeze(1), x).squeeze(1)
        yProj = self.tgt_embedding(yPrev.long())
        output, state = self.gru(torch.cat([yProj, context], 1).unsqueeze(1), sPrev)
        output = output.squeeze(1)

        output = self.fc(output)
        return output, state


class AttentionRecognitionHead(nn.Module):
    """
    input: [b x 16 x 64 x in_planes]
    output: probability sequence: [b x T x num_classes]
    """
    def __init__(self, num_classes, in_planes, sDim, attDim, max_len_labels):
        super(AttentionRecognitionHead, self).__init__()
        self.num_classes = num_classes  # this is the output classes. So it includes the <EOS>.
        self.in_planes = in_planes
        self.sDim = sDim
        self.attDim = attDim
        self.max_len_labels = max_len_labels

        self.decoder = DecoderUnit(sDim=sDim, xDim=in_planes, yDim=num_classes, attDim=attDim)

    def forward(self, x):
        x, targets, lengths = x
        batch_size = x.size(0)
        # Decoder
        state = torch.zeros(1, batch_size, self.sDim)
        outputs = []

        for i in range(max(lengths)):
            if i == 0:
                y_prev = torch.zeros((batch_size)).fill_(self.num_classes)  # the last one is used as the <BOS>.
            else:
                y_prev = targets[:, i - 1]

            output, state = self.decoder(x, state, y_prev)
            outputs.append(output)
        outputs = torch.cat([_.unsqueeze(1) for _ in outputs], 1)
        return outputs


class ModelBuilder(nn.Module):
    """
    This is the integrated model (encoder dropped: takes encoder features).
    """
    def __init__(self, rec_num_classes, encoder_out_planes, sDim, attDim, max_len_labels, eos):
        super(ModelBuilder, self).__init__()
        self.rec_num_classes = rec_num_classes
        self.sDim = sDim
        self.attDim = attDim
        self.max_len_labels = max_len_labels
        self.eos = eos

        self.decoder = AttentionRecognitionHead(
            num_classes=rec_num_classes,
            in_planes=encoder_out_planes,
            sDim=sDim,
            attDim=attDim,
            max_len_labels=max_len_labels)
        self.rec_crit = SequenceCrossEntropyLoss()

    def forward(self, input_dict):
        return_dict = {}
        return_dict['losses'] = {}
        return_dict['output'] = {}

        x, rec_targets, rec_lengths = input_dict['images'], \
            input_dict['rec_targets'], \
            input_dict['rec_lengths']

        encoder_feats = x.contiguous()

        rec_pred = self.decoder([encoder_feats, rec_targets, rec_lengths])
        loss_rec = self.rec_crit(rec_pred, rec_targets, rec_lengths)
        return_dict['losses']['loss_rec'] = loss_rec

        # pytorch0.4 bug on gathering scalar(0-dim) tensors
        for k, v in return_dict['losses'].items():
            return_dict['losses'][k] = v.unsqueeze(0)

        return return_dict


def train_step(model, optimizer, input_dict):
    output_dict = model(input_dict)
    loss = output_dict['losses']['loss_rec'].mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss


def main():
    torch.manual_seed(0)
    model = ModelBuilder(rec_num_classes=5, encoder_out_planes=8, sDim=8, attDim=8,
                         max_len_labels=6, eos=4)
    model.train()
    model = torch.compile(model)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    for input_dict in _batches():
        train_step(model, optimizer, input_dict)


def _batches():
    feats = torch.randn(2, 6, 8)
    targets = torch.tensor([[1, 2, 3, 4, 4, 4], [2, 0, 4, 4, 4, 4]])
    return [
        {'images': feats, 'rec_targets': targets, 'rec_lengths': torch.tensor([4, 3])},
        {'images': feats, 'rec_targets': targets, 'rec_lengths': torch.tensor([2, 6])},
    ]


def make():
    torch.manual_seed(0)
    model = ModelBuilder(rec_num_classes=5, encoder_out_planes=8, sDim=8, attDim=8,
                         max_len_labels=6, eos=4)
    model.train()
    return model, [(d,) for d in _batches()]
