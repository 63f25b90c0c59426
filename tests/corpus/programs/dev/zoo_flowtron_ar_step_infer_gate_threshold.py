"""Flowtron AR_Step.infer: a per-frame loop over two `nn.LSTM`s with (h, c) carried by tuple unpacking, `hasattr` feature checks, and an early stop `if (hasattr(self, 'gate_layer') and torch.sigmoid(self.gate_layer(decoder_input)) > self.gate_threshold)` that prints before `break`.

Source: NVIDIA/flowtron@d149bc466b8325026aeb68aa2fef24337e7463b2:flowtron.py:129-153,278-310,453-465,528-593,645-670,775-828
Kept: AttentionConditioningLayer, LinearNorm, ConvNorm, DenseLayer, Attention and
AR_Step (constructor, infer) verbatim; Flowtron.infer's `set_temperature_and_gate`
style of writing `gate_threshold` onto the step before calling infer.
Simplified: `torch.cuda.FloatTensor(...).zero_()` for the dummy frame is a CPU
torch.zeros; the training forward and packed-sequence helpers are left out; sizes
shrunk (8 mels, hidden 8, attention 8, text 6 + speaker 2).
"""
import torch
from torch import nn
from torch.nn import functional as F


class LinearNorm(torch.nn.Module):
    def __init__(self, in_dim, out_dim, bias=True, w_init_gain='linear'):
        super(LinearNorm, self).__init__()
        self.linear_layer = torch.nn.Linear(in_dim, out_dim, bias=bias)

        torch.nn.init.xavier_uniform_(
            self.linear_layer.weight,
            gain=torch.nn.init.calculate_gain(w_init_gain))

    def forward(self, x):
        return self.linear_layer(x)


class ConvNorm(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size=1, stride=1,
                 padding=None, dilation=1, bias=True, w_init_gain='linear'):
        super(ConvNorm, self).__init__()
        if padding is None:
            assert(kernel_size % 2 == 1)
            padding = int(dilation * (kernel_size - 1) / 2)

        self.conv = torch.nn.Conv1d(in_channels, out_channels,
                                    kernel_size=kernel_size, stride=stride,
                                    padding=padding, dilation=dilation,
                                    bias=bias)

        torch.nn.init.xavier_uniform_(
            self.conv.weight, gain=torch.nn.init.calculate_gain(w_init_gain))

    def forward(self, signal):
        conv_signal = self.conv(signal)
        return conv_signal



class AttentionConditioningLayer(nn.Module):
    """Adapted from the LocationLayer in
    https://github.com/NVIDIA/tacotron2/blob/master/model.py
    1D Conv model over a concatenation of the previous attention and the
    accumulated attention values """
    def __init__(self, input_dim=2, attention_n_filters=32,
                 attention_kernel_sizes=[5, 3], attention_dim=640):
        super(AttentionConditioningLayer, self).__init__()

        self.location_conv_hidden = ConvNorm(
            input_dim, attention_n_filters,
            kernel_size=attention_kernel_sizes[0], padding=None, bias=True,
            stride=1, dilation=1, w_init_gain='relu')
        self.location_conv_out = ConvNorm(
            attention_n_filters, attention_dim,
            kernel_size=attention_kernel_sizes[1], padding=None, bias=True,
            stride=1, dilation=1, w_init_gain='sigmoid')
        self.conv_layers = nn.Sequential(self.location_conv_hidden,
                                         nn.ReLU(),
                                         self.location_conv_out,
                                         nn.Sigmoid())

    def forward(self, attention_weights_cat):
        return self.conv_layers(attention_weights_cat)



class DenseLayer(nn.Module):
    def __init__(self, in_dim=1024, sizes=[1024, 1024]):
        super(DenseLayer, self).__init__()
        in_sizes = [in_dim] + sizes[:-1]
        self.layers = nn.ModuleList(
            [LinearNorm(in_size, out_size, bias=True)
             for (in_size, out_size) in zip(in_sizes, sizes)])

    def forward(self, x):
        for linear in self.layers:
            x = torch.tanh(linear(x))
        return x



class Attention(torch.nn.Module):
    def __init__(self, n_mel_channels=80, n_speaker_dim=128,
                 n_text_channels=512, n_att_channels=128, temperature=1.0):
        super(Attention, self).__init__()
        self.temperature = temperature
        self.softmax = torch.nn.Softmax(dim=2)
        self.query = LinearNorm(n_mel_channels,
                                n_att_channels, bias=False, w_init_gain='tanh')
        self.key = LinearNorm(n_text_channels+n_speaker_dim,
                              n_att_channels, bias=False, w_init_gain='tanh')
        self.value = LinearNorm(n_text_channels+n_speaker_dim,
                                n_att_channels, bias=False,
                                w_init_gain='tanh')
        self.v = LinearNorm(n_att_channels, 1, bias=False, w_init_gain='tanh')
        self.score_mask_value = -float("inf")

    def compute_attention_posterior(self, attn, attn_prior, mask=None,
                                    eps=1e-20):
        attn_prior = torch.log(attn_prior.float() + eps)
        attn = torch.log(attn.float() + eps)
        attn_posterior = attn + attn_prior

        attn_logprob = attn_posterior.clone()

        if mask is not None:
            attn_posterior.data.masked_fill_(
                mask.transpose(1, 2), self.score_mask_value)

        attn_posterior = self.softmax(attn_posterior)
        return attn_posterior, attn_logprob

    def forward(self, queries, keys, values, mask=None, attn=None,
                attn_prior=None):
        """
        returns:
            attention weights batch x mel_seq_len x text_seq_len
            attention_context batch x featdim x mel_seq_len
            sums to 1 over text_seq_len(keys)
        """
        if attn is None:
            keys = self.key(keys).transpose(0, 1)
            values = self.value(values) if hasattr(self, 'value') else values
            values = values.transpose(0, 1)
            queries = self.query(queries).transpose(0, 1)
            attn = self.v(torch.tanh((queries[:, :, None] + keys[:, None])))
            attn = attn[..., 0] / self.temperature
            if mask is not None:
                attn.data.masked_fill_(mask.transpose(1, 2),
                                       self.score_mask_value)
            attn = self.softmax(attn)

            if attn_prior is not None:
                attn, attn_logprob = self.compute_attention_posterior(
                    attn, attn_prior, mask)
            else:
                attn_logprob = torch.log(attn.float() + 1e-8)

        else:
            attn_logprob = None
            values = self.value(values)
            values = values.transpose(0, 1)

        output = torch.bmm(attn, values)
        output = output.transpose(1, 2)
        return output, attn, attn_logprob



class AR_Step(torch.nn.Module):
    def __init__(self, n_mel_channels, n_speaker_dim, n_text_channels,
                 n_in_channels, n_hidden, n_attn_channels, n_lstm_layers,
                 add_gate, use_cumm_attention):
        super(AR_Step, self).__init__()
        self.use_cumm_attention = use_cumm_attention
        self.conv = torch.nn.Conv1d(n_hidden, 2*n_mel_channels, 1)
        self.conv.weight.data = 0.0*self.conv.weight.data
        self.conv.bias.data = 0.0*self.conv.bias.data
        self.lstm = torch.nn.LSTM(n_hidden+n_attn_channels, n_hidden, n_lstm_layers)
        self.attention_lstm = torch.nn.LSTM(n_mel_channels, n_hidden)
        self.attention_layer = Attention(n_hidden, n_speaker_dim,
                                         n_text_channels, n_attn_channels)
        if self.use_cumm_attention:
            self.attn_cond_layer = AttentionConditioningLayer(
                input_dim=2, attention_n_filters=32,
                attention_kernel_sizes=[5, 3],
                attention_dim=n_text_channels + n_speaker_dim)
        self.dense_layer = DenseLayer(in_dim=n_hidden,
                                      sizes=[n_hidden, n_hidden])
        if add_gate:
            self.gate_threshold = 0.5
            self.gate_layer = LinearNorm(
                n_hidden+n_attn_channels, 1, bias=True,
                w_init_gain='sigmoid')


    def infer(self, residual, text, attns, attn_prior=None):
        attn_cond_vector = 1.0
        if hasattr(self, 'use_cumm_attention') and self.use_cumm_attention:
            attn_cumm_tensor = text[:, :, 0:1].permute(1, 2, 0)*0
            attention_weight = attn_cumm_tensor*0
        attention_weights = []
        total_output = []  # seems 10FPS faster than pre-allocation

        output = None
        attn = None
        dummy = torch.zeros(
            1, residual.size(1), residual.size(2), device=residual.device)
        for i in range(0, residual.size(0)):
            if i == 0:
                attention_hidden, (h, c) = self.attention_lstm(dummy)
            else:
                attention_hidden, (h, c) = self.attention_lstm(output, (h, c))

            if hasattr(self, 'use_cumm_attention') and self.use_cumm_attention:
                attn_cat = torch.cat((attn_cumm_tensor, attention_weight), 1)
                attn_cond_vector = self.attn_cond_layer(attn_cat).permute(2, 0, 1)

            attn = None if attns is None else attns[i][None, None]
            attn_prior_i = None if attn_prior is None else attn_prior[:, i][None]

            (attention_context, attention_weight,
                attention_logprob) = self.attention_layer(
                attention_hidden, text * attn_cond_vector, text, attn=attn,
                attn_prior=attn_prior_i)

            if hasattr(self, 'use_cumm_attention') and self.use_cumm_attention:
                attn_cumm_tensor = attn_cumm_tensor + attention_weight

            attention_weights.append(attention_weight)
            attention_context = attention_context.permute(2, 0, 1)
            decoder_input = torch.cat((
                attention_hidden, attention_context), -1)
            if i == 0:
                lstm_hidden, (h1, c1) = self.lstm(decoder_input)
            else:
                lstm_hidden, (h1, c1) = self.lstm(decoder_input, (h1, c1))
            lstm_hidden = self.dense_layer(lstm_hidden).permute(1, 2, 0)
            decoder_output = self.conv(lstm_hidden).permute(2, 0, 1)

            log_s = decoder_output[:, :, :decoder_output.size(2)//2]
            b = decoder_output[:, :, decoder_output.size(2)//2:]
            output = (residual[i, :, :] - b)/torch.exp(log_s)
            total_output.append(output)
            if (hasattr(self, 'gate_layer') and
                    torch.sigmoid(self.gate_layer(decoder_input)) > self.gate_threshold):
                print("Hitting gate limit")
                break
        total_output = torch.cat(total_output, 0)
        return total_output, attention_weights


def build_flow_step(use_cumm_attention=True):
    # config.json (shrunk): n_mel_channels, n_speaker_dim, n_text_dim, n_hidden,
    # n_attn_channels, n_lstm_layers, use_gate_layer, use_cumm_attention
    return AR_Step(8, 2, 6, 8, 8, 8, 2, True, use_cumm_attention).eval()


step = build_flow_step()
infer = torch.compile(step.infer)


def make():
    torch.manual_seed(0)
    flow = build_flow_step()
    with torch.no_grad():
        flow.gate_layer.linear_layer.bias.fill_(1.52)  # puts the gate near its threshold
    # inference.py: residual = torch.cuda.FloatTensor(1, 80, n_frames).normal_() * sigma,
    # permuted to (frames, batch, mels) by Flowtron.infer; text is encoder output + speaker.
    residual = torch.randn(12, 1, 8)
    text = torch.randn(5, 1, 6 + 2)
    flow.gate_threshold = 0.5
    return flow.infer, [(residual * 3.0, text, None), (residual * 0.5, text, None)]
