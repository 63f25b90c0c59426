"""OpenVoice (VITS) WaveNet `WN.forward`: a `@torch.jit.script` helper receives `torch.IntTensor([hidden])` and
slices with `n_channels[0]`.

Source: myshell-ai/OpenVoice@858b29cd:openvoice/commons.py (fused_add_tanh_sigmoid_multiply, jit-scripted) and
openvoice/modules.py (WN.__init__/forward, two-space indentation kept)
Census: penguinwu/oss-model-graph-break-corpus corpora/custom-models README: GPT-SoVITS-SynthesizerTrn infer,
"Tensor.item() in WaveNet" (4 breaks); OpenVoice-SynthesizerTrn uses the same WN.
Kept: the scripted helper, WN's conditioning split per layer, residual/skip bookkeeping, masks.
Simplified: no weight_norm; 2 layers, hidden 4, gin 3.
"""
import torch


@torch.jit.script
def fused_add_tanh_sigmoid_multiply(input_a, input_b, n_channels):
  n_channels_int = n_channels[0]
  in_act = input_a + input_b
  t_act = torch.tanh(in_act[:, :n_channels_int, :])
  s_act = torch.sigmoid(in_act[:, n_channels_int:, :])
  acts = t_act * s_act
  return acts


class WN(torch.nn.Module):
  def __init__(self, hidden_channels=4, kernel_size=3, dilation_rate=1, n_layers=2, gin_channels=3, p_dropout=0):
    super(WN, self).__init__()
    assert(kernel_size % 2 == 1)
    self.hidden_channels = hidden_channels
    self.kernel_size = kernel_size,
    self.dilation_rate = dilation_rate
    self.n_layers = n_layers
    self.gin_channels = gin_channels
    self.p_dropout = p_dropout

    self.in_layers = torch.nn.ModuleList()
    self.res_skip_layers = torch.nn.ModuleList()
    self.drop = torch.nn.Dropout(p_dropout)

    if gin_channels != 0:
      self.cond_layer = torch.nn.Conv1d(gin_channels, 2*hidden_channels*n_layers, 1)

    for i in range(n_layers):
      dilation = dilation_rate ** i
      padding = int((kernel_size * dilation - dilation) / 2)
      in_layer = torch.nn.Conv1d(hidden_channels, 2*hidden_channels, kernel_size,
                                 dilation=dilation, padding=padding)
      self.in_layers.append(in_layer)

      # last one is not necessary
      if i < n_layers - 1:
        res_skip_channels = 2 * hidden_channels
      else:
        res_skip_channels = hidden_channels

      res_skip_layer = torch.nn.Conv1d(hidden_channels, res_skip_channels, 1)
      self.res_skip_layers.append(res_skip_layer)

  def forward(self, x, x_mask, g=None, **kwargs):
    output = torch.zeros_like(x)
    n_channels_tensor = torch.IntTensor([self.hidden_channels])

    if g is not None:
      g = self.cond_layer(g)

    for i in range(self.n_layers):
      x_in = self.in_layers[i](x)
      if g is not None:
        cond_offset = i * 2 * self.hidden_channels
        g_l = g[:,cond_offset:cond_offset+2*self.hidden_channels,:]
      else:
        g_l = torch.zeros_like(x_in)

      acts = fused_add_tanh_sigmoid_multiply(
          x_in,
          g_l,
          n_channels_tensor)
      acts = self.drop(acts)

      res_skip_acts = self.res_skip_layers[i](acts)
      if i < self.n_layers - 1:
        res_acts = res_skip_acts[:,:self.hidden_channels,:]
        x = (x + res_acts) * x_mask
        output = output + res_skip_acts[:,self.hidden_channels:,:]
      else:
        output = output + res_skip_acts
    return output * x_mask


wn = torch.compile(WN())


def make():
  torch.manual_seed(0)
  x = torch.randn(1, 4, 6)
  mask = torch.ones(1, 1, 6)
  return WN(), [(x, mask), (x, mask, torch.randn(1, 3, 1))]
