"""ESPnet VGG2L + RNNP encoder: `logging.debug(... + str(ilens))`, VGG2L's numpy length arithmetic ending in `.tolist()`, packed LSTM layers, and `[int(i + 1) // sub for i in ilens]` after subsampling.

Source: espnet/espnet@24c3676a8d4c2e60d2726e9bcd9bdbed740610e0:espnet/nets/pytorch_backend/rnn/encoders.py:13-90,162-320
Also: espnet/nets/e2e_asr_common.py (get_vgg2l_odim),
espnet/nets/pytorch_backend/nets_utils.py (make_pad_mask, to_device).
Kept: RNNP.forward (pack_padded_sequence per layer, flatten_parameters when
training, the bidirectional state reset, pad_packed_sequence, subsampling of
frames and lengths, the bottleneck projection), VGG2L.forward with its numpy
ceil on lengths, Encoder's constructor switch and forward with the pad mask,
reset_backward_rnn_state.
Simplified: `six.moves.range` is `range`; make_pad_mask keeps only the
`xs=None` path the encoder uses; VGG2L's conv widths are 8/16 instead of
64/128 (get_vgg2l_odim follows); idim 8, 2 layers of 6 units.
"""
import logging

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

VGG_OUT_CHANNELS = 16


def get_vgg2l_odim(idim, in_channel=3, out_channel=VGG_OUT_CHANNELS):
    """Return the output size of the VGG frontend."""
    idim = idim / in_channel
    idim = np.ceil(np.array(idim, dtype=np.float32) / 2)  # 1st max pooling
    idim = np.ceil(np.array(idim, dtype=np.float32) / 2)  # 2nd max pooling
    return int(idim) * out_channel  # number of channels


def to_device(m, x):
    """Send tensor into the device of the module."""
    if isinstance(m, torch.nn.Module):
        device = next(m.parameters()).device
    elif isinstance(m, torch.Tensor):
        device = m.device
    else:
        raise TypeError(f"Expected torch.nn.Module or torch.tensor, bot got: {type(m)}")
    return x.to(device)


def make_pad_mask(lengths, length_dim=-1):
    """Mask of the padded part (B, Tmax) for `lengths`, a list or a tensor."""
    if length_dim == 0:
        raise ValueError("length_dim cannot be 0: {}".format(length_dim))
    if not isinstance(lengths, list):
        lengths = lengths.tolist()
    bs = int(len(lengths))
    maxlen = int(max(lengths))
    seq_range = torch.arange(0, maxlen, dtype=torch.int64)
    seq_range_expand = seq_range.unsqueeze(0).expand(bs, maxlen)
    seq_length_expand = seq_range_expand.new(lengths).unsqueeze(-1)
    return seq_range_expand >= seq_length_expand


def reset_backward_rnn_state(states):
    """Sets backward BRNN states to zeroes"""
    if isinstance(states, (list, tuple)):
        for state in states:
            state[1::2] = 0.0
    else:
        states[1::2] = 0.0
    return states


class RNNP(torch.nn.Module):
    """RNN with projection layer module"""

    def __init__(self, idim, elayers, cdim, hdim, subsample, dropout, typ="blstm"):
        super(RNNP, self).__init__()
        bidir = typ[0] == "b"
        for i in range(elayers):
            if i == 0:
                inputdim = idim
            else:
                inputdim = hdim

            RNN = torch.nn.LSTM if "lstm" in typ else torch.nn.GRU
            rnn = RNN(inputdim, cdim, num_layers=1, bidirectional=bidir, batch_first=True)

            setattr(self, "%s%d" % ("birnn" if bidir else "rnn", i), rnn)

            # bottleneck layer to merge
            if bidir:
                setattr(self, "bt%d" % i, torch.nn.Linear(2 * cdim, hdim))
            else:
                setattr(self, "bt%d" % i, torch.nn.Linear(cdim, hdim))

        self.elayers = elayers
        self.cdim = cdim
        self.subsample = subsample
        self.typ = typ
        self.bidir = bidir
        self.dropout = dropout

    def forward(self, xs_pad, ilens, prev_state=None):
        logging.debug(self.__class__.__name__ + " input lengths: " + str(ilens))
        elayer_states = []
        for layer in range(self.elayers):
            if not isinstance(ilens, torch.Tensor):
                ilens = torch.tensor(ilens)
            xs_pack = pack_padded_sequence(xs_pad, ilens.cpu(), batch_first=True)
            rnn = getattr(self, ("birnn" if self.bidir else "rnn") + str(layer))
            if self.training:
                rnn.flatten_parameters()
            if prev_state is not None and rnn.bidirectional:
                prev_state = reset_backward_rnn_state(prev_state)
            ys, states = rnn(xs_pack, hx=None if prev_state is None else prev_state[layer])
            elayer_states.append(states)
            # ys: utt list of frame x cdim x 2 (2: means bidirectional)
            ys_pad, ilens = pad_packed_sequence(ys, batch_first=True)
            sub = self.subsample[layer + 1]
            if sub > 1:
                ys_pad = ys_pad[:, ::sub]
                ilens = torch.tensor([int(i + 1) // sub for i in ilens])
            # (sum _utt frame_utt) x dim
            projection_layer = getattr(self, "bt%d" % layer)
            projected = projection_layer(ys_pad.contiguous().view(-1, ys_pad.size(2)))
            xs_pad = projected.view(ys_pad.size(0), ys_pad.size(1), -1)
            if layer < self.elayers - 1:
                xs_pad = torch.tanh(F.dropout(xs_pad, p=self.dropout))

        return xs_pad, ilens, elayer_states  # x: utt list of frame x dim


class VGG2L(torch.nn.Module):
    """VGG-like module"""

    def __init__(self, in_channel=1):
        super(VGG2L, self).__init__()
        # CNN layer (VGG motivated)
        self.conv1_1 = torch.nn.Conv2d(in_channel, VGG_OUT_CHANNELS // 2, 3, stride=1, padding=1)
        self.conv1_2 = torch.nn.Conv2d(VGG_OUT_CHANNELS // 2, VGG_OUT_CHANNELS // 2, 3, stride=1, padding=1)
        self.conv2_1 = torch.nn.Conv2d(VGG_OUT_CHANNELS // 2, VGG_OUT_CHANNELS, 3, stride=1, padding=1)
        self.conv2_2 = torch.nn.Conv2d(VGG_OUT_CHANNELS, VGG_OUT_CHANNELS, 3, stride=1, padding=1)

        self.in_channel = in_channel

    def forward(self, xs_pad, ilens, **kwargs):
        logging.debug(self.__class__.__name__ + " input lengths: " + str(ilens))

        # x: utt x 1 (input channel num) x frame x dim
        xs_pad = xs_pad.view(
            xs_pad.size(0),
            xs_pad.size(1),
            self.in_channel,
            xs_pad.size(2) // self.in_channel,
        ).transpose(1, 2)

        # NOTE: max_pool1d ?
        xs_pad = F.relu(self.conv1_1(xs_pad))
        xs_pad = F.relu(self.conv1_2(xs_pad))
        xs_pad = F.max_pool2d(xs_pad, 2, stride=2, ceil_mode=True)

        xs_pad = F.relu(self.conv2_1(xs_pad))
        xs_pad = F.relu(self.conv2_2(xs_pad))
        xs_pad = F.max_pool2d(xs_pad, 2, stride=2, ceil_mode=True)
        if torch.is_tensor(ilens):
            ilens = ilens.cpu().numpy()
        else:
            ilens = np.array(ilens, dtype=np.float32)
        ilens = np.array(np.ceil(ilens / 2), dtype=np.int64)
        ilens = np.array(np.ceil(np.array(ilens, dtype=np.float32) / 2), dtype=np.int64).tolist()

        # x: utt_list of frame (remove zeropaded frames) x (input channel num x dim)
        xs_pad = xs_pad.transpose(1, 2)
        xs_pad = xs_pad.contiguous().view(xs_pad.size(0), xs_pad.size(1), xs_pad.size(2) * xs_pad.size(3))
        return xs_pad, ilens, None  # no state in this layer


class Encoder(torch.nn.Module):
    def __init__(self, etype, idim, elayers, eunits, eprojs, subsample, dropout, in_channel=1):
        super(Encoder, self).__init__()
        typ = etype.lstrip("vgg").rstrip("p")
        if typ not in ["lstm", "gru", "blstm", "bgru"]:
            logging.error("Error: need to specify an appropriate encoder architecture")

        if etype.startswith("vgg"):
            if etype[-1] == "p":
                self.enc = torch.nn.ModuleList(
                    [
                        VGG2L(in_channel),
                        RNNP(
                            get_vgg2l_odim(idim, in_channel=in_channel),
                            elayers,
                            eunits,
                            eprojs,
                            subsample,
                            dropout,
                            typ=typ,
                        ),
                    ]
                )
                logging.info("Use CNN-VGG + " + typ.upper() + "P for encoder")
            self.conv_subsampling_factor = 4
        else:
            self.enc = torch.nn.ModuleList([RNNP(idim, elayers, eunits, eprojs, subsample, dropout, typ=typ)])
            logging.info(typ.upper() + " with every-layer projection for encoder")
            self.conv_subsampling_factor = 1

    def forward(self, xs_pad, ilens, prev_states=None):
        if prev_states is None:
            prev_states = [None] * len(self.enc)
        assert len(prev_states) == len(self.enc)

        current_states = []
        for module, prev_state in zip(self.enc, prev_states):
            xs_pad, ilens, states = module(xs_pad, ilens, prev_state=prev_state)
            current_states.append(states)

        # make mask to remove bias value in padded part
        mask = to_device(xs_pad, make_pad_mask(ilens).unsqueeze(-1))

        return xs_pad.masked_fill(mask, 0.0), ilens, current_states


def build_encoder(etype="vggblstmp"):
    return Encoder(etype, idim=8, elayers=2, eunits=6, eprojs=6, subsample=np.array([1, 2, 1]), dropout=0.0)


def recognize_setup():
    encoder = build_encoder().eval()
    return torch.compile(encoder)


def make():
    torch.manual_seed(0)
    encoder = build_encoder().eval()
    xs_pad = torch.randn(2, 16, 8)
    return encoder, [
        (xs_pad, torch.tensor([16, 11])),
        (xs_pad[:1, :9], [9]),
    ]
