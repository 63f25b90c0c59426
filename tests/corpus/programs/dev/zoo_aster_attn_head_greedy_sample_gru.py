"""ASTER text recognizer inference: `AttentionRecognitionHead.sample` greedy decoding, one attention-GRU step per character for `max_len_labels` steps, feeding back the argmax.

Source: ayumiymk/aster.pytorch@be670046c775b54de79766208f0c59321ae1eccf:lib/models/attention_recognition_head.py:11-24,44-66,187-263
Kept: sample() verbatim (the `x, _, _ = x` list input, `<BOS>` fill, softmax then
`output.max(1)`, id/score lists concatenated), AttentionUnit and DecoderUnit
(nn.GRU step, `yPrev.long()` embedding lookup).
Simplified: encoder features are given directly (b x 6 x 8); 5 classes, sDim 8,
attDim 8, max_len_labels 5. The compiled entry is the bound `head.sample` of an
eval-mode head.
"""
import torch
from torch import nn
from torch.nn import functional as F


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

    # inference stage.
    def sample(self, x):
        x, _, _ = x
        batch_size = x.size(0)
        # Decoder
        state = torch.zeros(1, batch_size, self.sDim)

        predicted_ids, predicted_scores = [], []
        for i in range(self.max_len_labels):
            if i == 0:
                y_prev = torch.zeros((batch_size)).fill_(self.num_classes)
            else:
                y_prev = predicted

            output, state = self.decoder(x, state, y_prev)
            output = F.softmax(output, dim=1)
            score, predicted = output.max(1)
            predicted_ids.append(predicted.unsqueeze(1))
            predicted_scores.append(score.unsqueeze(1))
        predicted_ids = torch.cat(predicted_ids, 1)
        predicted_scores = torch.cat(predicted_scores, 1)
        # return predicted_ids.squeeze(), predicted_scores.squeeze()
        return predicted_ids, predicted_scores


def build_recognizer():
    head = AttentionRecognitionHead(num_classes=5, in_planes=8, sDim=8, attDim=8,
                                    max_len_labels=5)
    head.eval()
    return torch.compile(head.sample)


def make():
    torch.manual_seed(0)
    head = AttentionRecognitionHead(num_classes=5, in_planes=8, sDim=8, attDim=8,
                                    max_len_labels=5)
    head.eval()
    feats = torch.randn(2, 6, 8)
    return head.sample, [([feats, None, None],), ([feats[:1], None, None],)]
