"""VITS SynthesizerTrn.infer: predicted durations are ceiled and summed into y_lengths, `commons.sequence_mask(y_lengths, None)` takes `length.max()` as the output length, and generate_path builds the monotonic alignment from cumsum durations.

Source: jaywalnut310/vits@2e561ba58618d021b5b8323d3765880f7e0ecfdb:models.py:98-177,499-519
Also: commons.py:18-21,121-143 (convert_pad_shape, sequence_mask, generate_path),
modules.py (LayerNorm over channels).
Kept: DurationPredictor and TextEncoder.forward verbatim, infer's body from
enc_p to the expanded prior and z_p (the n_speakers and use_sdp switches,
length_scale, w_ceil, y_lengths, y_mask, attn_mask, generate_path, the matmuls),
commons' helpers verbatim.
Simplified: attentions.Encoder is a conv stand-in; the normalising flow and
HiFi-GAN decoder are one 1x1 conv (`dec`); the StochasticDurationPredictor is
not built (use_sdp=False); hidden 8, vocab 10.
"""
import math

import torch
from torch import nn
from torch.nn import functional as F


def convert_pad_shape(pad_shape):
  l = pad_shape[::-1]
  pad_shape = [item for sublist in l for item in sublist]
  return pad_shape


def sequence_mask(length, max_length=None):
  if max_length is None:
    max_length = length.max()
  x = torch.arange(max_length, dtype=length.dtype, device=length.device)
  return x.unsqueeze(0) < length.unsqueeze(1)


def generate_path(duration, mask):
  """
  duration: [b, 1, t_x]
  mask: [b, 1, t_y, t_x]
  """
  device = duration.device

  b, _, t_y, t_x = mask.shape
  cum_duration = torch.cumsum(duration, -1)

  cum_duration_flat = cum_duration.view(b * t_x)
  path = sequence_mask(cum_duration_flat, t_y).to(mask.dtype)
  path = path.view(b, t_x, t_y)
  path = path - F.pad(path, convert_pad_shape([[0, 0], [1, 0], [0, 0]]))[:, :-1]
  path = path.unsqueeze(1).transpose(2,3) * mask
  return path


class LayerNorm(nn.Module):
  def __init__(self, channels, eps=1e-5):
    super().__init__()
    self.channels = channels
    self.eps = eps

    self.gamma = nn.Parameter(torch.ones(channels))
    self.beta = nn.Parameter(torch.zeros(channels))

  def forward(self, x):
    x = x.transpose(1, -1)
    x = F.layer_norm(x, (self.channels,), self.gamma, self.beta, self.eps)
    return x.transpose(1, -1)


class ConvEncoder(nn.Module):
  """Stand-in for attentions.Encoder: masked conv layers."""
  def __init__(self, hidden_channels, n_layers, kernel_size):
    super().__init__()
    self.convs = nn.ModuleList([
      nn.Conv1d(hidden_channels, hidden_channels, kernel_size, padding=kernel_size//2)
      for _ in range(n_layers)])

  def forward(self, x, x_mask):
    for conv in self.convs:
      x = torch.relu(conv(x * x_mask)) + x
    return x * x_mask


class DurationPredictor(nn.Module):
  def __init__(self, in_channels, filter_channels, kernel_size, p_dropout, gin_channels=0):
    super().__init__()

    self.in_channels = in_channels
    self.filter_channels = filter_channels
    self.kernel_size = kernel_size
    self.p_dropout = p_dropout
    self.gin_channels = gin_channels

    self.drop = nn.Dropout(p_dropout)
    self.conv_1 = nn.Conv1d(in_channels, filter_channels, kernel_size, padding=kernel_size//2)
    self.norm_1 = LayerNorm(filter_channels)
    self.conv_2 = nn.Conv1d(filter_channels, filter_channels, kernel_size, padding=kernel_size//2)
    self.norm_2 = LayerNorm(filter_channels)
    self.proj = nn.Conv1d(filter_channels, 1, 1)

    if gin_channels != 0:
      self.cond = nn.Conv1d(gin_channels, in_channels, 1)

  def forward(self, x, x_mask, g=None):
    x = torch.detach(x)
    if g is not None:
      g = torch.detach(g)
      x = x + self.cond(g)
    x = self.conv_1(x * x_mask)
    x = torch.relu(x)
    x = self.norm_1(x)
    x = self.drop(x)
    x = self.conv_2(x * x_mask)
    x = torch.relu(x)
    x = self.norm_2(x)
    x = self.drop(x)
    x = self.proj(x * x_mask)
    return x * x_mask


class TextEncoder(nn.Module):
  def __init__(self,
      n_vocab,
      out_channels,
      hidden_channels,
      filter_channels,
      n_heads,
      n_layers,
      kernel_size,
      p_dropout):
    super().__init__()
    self.n_vocab = n_vocab
    self.out_channels = out_channels
    self.hidden_channels = hidden_channels
    self.filter_channels = filter_channels
    self.n_heads = n_heads
    self.n_layers = n_layers
    self.kernel_size = kernel_size
    self.p_dropout = p_dropout

    self.emb = nn.Embedding(n_vocab, hidden_channels)
    nn.init.normal_(self.emb.weight, 0.0, hidden_channels**-0.5)

    self.encoder = ConvEncoder(hidden_channels, n_layers, kernel_size)
    self.proj= nn.Conv1d(hidden_channels, out_channels * 2, 1)

  def forward(self, x, x_lengths):
    x = self.emb(x) * math.sqrt(self.hidden_channels) # [b, t, h]
    x = torch.transpose(x, 1, -1) # [b, h, t]
    x_mask = torch.unsqueeze(sequence_mask(x_lengths, x.size(2)), 1).to(x.dtype)

    x = self.encoder(x * x_mask, x_mask)
    stats = self.proj(x) * x_mask

    m, logs = torch.split(stats, self.out_channels, dim=1)
    return x, m, logs, x_mask


class SynthesizerTrn(nn.Module):
  def __init__(self, n_vocab, inter_channels, hidden_channels, filter_channels,
      n_heads, n_layers, kernel_size, p_dropout, n_speakers=0, gin_channels=0, use_sdp=False, **kwargs):
    super().__init__()
    self.n_speakers = n_speakers
    self.use_sdp = use_sdp
    self.enc_p = TextEncoder(n_vocab, inter_channels, hidden_channels, filter_channels,
        n_heads, n_layers, kernel_size, p_dropout)
    self.dp = DurationPredictor(hidden_channels, 16, 3, 0.5, gin_channels=gin_channels)
    self.dec = nn.Conv1d(inter_channels, 1, 1)
    if n_speakers > 1:
      self.emb_g = nn.Embedding(n_speakers, gin_channels)

  def infer(self, x, x_lengths, sid=None, noise_scale=1, length_scale=1, noise_scale_w=1., max_len=None):
    x, m_p, logs_p, x_mask = self.enc_p(x, x_lengths)
    if self.n_speakers > 0:
      g = self.emb_g(sid).unsqueeze(-1) # [b, h, 1]
    else:
      g = None

    logw = self.dp(x, x_mask, g=g)
    w = torch.exp(logw) * x_mask * length_scale
    w_ceil = torch.ceil(w)
    y_lengths = torch.clamp_min(torch.sum(w_ceil, [1, 2]), 1).long()
    y_mask = torch.unsqueeze(sequence_mask(y_lengths, None), 1).to(x_mask.dtype)
    attn_mask = torch.unsqueeze(x_mask, 2) * torch.unsqueeze(y_mask, -1)
    attn = generate_path(w_ceil, attn_mask)

    m_p = torch.matmul(attn.squeeze(1), m_p.transpose(1, 2)).transpose(1, 2) # [b, t', t], [b, t, d] -> [b, d, t']
    logs_p = torch.matmul(attn.squeeze(1), logs_p.transpose(1, 2)).transpose(1, 2) # [b, t', t], [b, t, d] -> [b, d, t']

    z_p = m_p + torch.randn_like(m_p) * torch.exp(logs_p) * noise_scale
    o = self.dec((z_p * y_mask)[:,:,:max_len])
    return o, attn, y_mask, (z_p, m_p, logs_p)


def load_synthesizer():
  net_g = SynthesizerTrn(10, 4, 8, 16, 2, 2, 3, 0.1).eval()
  return torch.compile(net_g.infer)


def make():
  torch.manual_seed(0)
  net_g = SynthesizerTrn(10, 4, 8, 16, 2, 2, 3, 0.1).eval()
  x = torch.randint(0, 10, (2, 5))
  x_lengths = torch.tensor([5, 3])
  return net_g.infer, [
    (x, x_lengths, None, 0.667, 1.0),
    (x[:1], x_lengths[:1], None, 0.667, 1.5, 1.0, 4),
  ]
