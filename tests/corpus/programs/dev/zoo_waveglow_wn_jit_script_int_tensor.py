"""WaveGlow WN + WaveGlowLoss: each layer calls the `@torch.jit.script` fused_add_tanh_sigmoid_multiply with `torch.IntTensor([self.n_channels])`, whose element 0 slices the channels; the loss sums per-flow log_s/log_det_W lists.

Source: NVIDIA/waveglow@8afb643df59265016af6bd255c7516309d675168:glow.py:33-60,105-175
Kept: fused_add_tanh_sigmoid_multiply (scripted) and WN verbatim (weight_norm
convs, cond_layer offsets, res/skip split); WaveGlowLoss verbatim.
Simplified: one coupling step (no Invertible1x1Conv / unfold plumbing): the
module runs WN on half the audio channels and returns the affine-coupled
output with a zero log_det_W; 8 audio channels, 2 WN layers of 8.
"""
import torch


@torch.jit.script
def fused_add_tanh_sigmoid_multiply(input_a, input_b, n_channels):
    n_channels_int = n_channels[0]
    in_act = input_a+input_b
    t_act = torch.tanh(in_act[:, :n_channels_int, :])
    s_act = torch.sigmoid(in_act[:, n_channels_int:, :])
    acts = t_act * s_act
    return acts


class WaveGlowLoss(torch.nn.Module):
    def __init__(self, sigma=1.0):
        super(WaveGlowLoss, self).__init__()
        self.sigma = sigma

    def forward(self, model_output):
        z, log_s_list, log_det_W_list = model_output
        for i, log_s in enumerate(log_s_list):
            if i == 0:
                log_s_total = torch.sum(log_s)
                log_det_W_total = log_det_W_list[i]
            else:
                log_s_total = log_s_total + torch.sum(log_s)
                log_det_W_total += log_det_W_list[i]

        loss = torch.sum(z*z)/(2*self.sigma*self.sigma) - log_s_total - log_det_W_total
        return loss/(z.size(0)*z.size(1)*z.size(2))



class WN(torch.nn.Module):
    """
    This is the WaveNet like layer for the affine coupling.  The primary difference
    from WaveNet is the convolutions need not be causal.  There is also no dilation
    size reset.  The dilation only doubles on each layer
    """
    def __init__(self, n_in_channels, n_mel_channels, n_layers, n_channels,
                 kernel_size):
        super(WN, self).__init__()
        assert(kernel_size % 2 == 1)
        assert(n_channels % 2 == 0)
        self.n_layers = n_layers
        self.n_channels = n_channels
        self.in_layers = torch.nn.ModuleList()
        self.res_skip_layers = torch.nn.ModuleList()

        start = torch.nn.Conv1d(n_in_channels, n_channels, 1)
        start = torch.nn.utils.weight_norm(start, name='weight')
        self.start = start

        # Initializing last layer to 0 makes the affine coupling layers
        # do nothing at first.  This helps with training stability
        end = torch.nn.Conv1d(n_channels, 2*n_in_channels, 1)
        end.weight.data.zero_()
        end.bias.data.zero_()
        self.end = end

        cond_layer = torch.nn.Conv1d(n_mel_channels, 2*n_channels*n_layers, 1)
        self.cond_layer = torch.nn.utils.weight_norm(cond_layer, name='weight')

        for i in range(n_layers):
            dilation = 2 ** i
            padding = int((kernel_size*dilation - dilation)/2)
            in_layer = torch.nn.Conv1d(n_channels, 2*n_channels, kernel_size,
                                       dilation=dilation, padding=padding)
            in_layer = torch.nn.utils.weight_norm(in_layer, name='weight')
            self.in_layers.append(in_layer)


            # last one is not necessary
            if i < n_layers - 1:
                res_skip_channels = 2*n_channels
            else:
                res_skip_channels = n_channels
            res_skip_layer = torch.nn.Conv1d(n_channels, res_skip_channels, 1)
            res_skip_layer = torch.nn.utils.weight_norm(res_skip_layer, name='weight')
            self.res_skip_layers.append(res_skip_layer)

    def forward(self, forward_input):
        audio, spect = forward_input
        audio = self.start(audio)
        output = torch.zeros_like(audio)
        n_channels_tensor = torch.IntTensor([self.n_channels])

        spect = self.cond_layer(spect)

        for i in range(self.n_layers):
            spect_offset = i*2*self.n_channels
            acts = fused_add_tanh_sigmoid_multiply(
                self.in_layers[i](audio),
                spect[:,spect_offset:spect_offset+2*self.n_channels,:],
                n_channels_tensor)

            res_skip_acts = self.res_skip_layers[i](acts)
            if i < self.n_layers - 1:
                audio = audio + res_skip_acts[:,:self.n_channels,:]
                output = output + res_skip_acts[:,self.n_channels:,:]
            else:
                output = output + res_skip_acts

        return self.end(output)


class AffineCoupling(torch.nn.Module):
    """One flow of WaveGlow.forward (glow.py:232-244) feeding WaveGlowLoss."""
    def __init__(self, n_group, n_mel_channels, WN_config):
        super().__init__()
        self.WN = WN(n_group // 2, n_mel_channels, **WN_config)
        self.loss = WaveGlowLoss(sigma=1.0)

    def forward(self, audio, spect):
        n_half = int(audio.size(1)/2)
        audio_0 = audio[:,:n_half,:]
        audio_1 = audio[:,n_half:,:]

        output = self.WN((audio_0, spect))
        log_s = output[:, n_half:, :]
        b = output[:, :n_half, :]
        audio_1 = torch.exp(log_s)*audio_1 + b
        audio = torch.cat([audio_0, audio_1],1)
        log_det_W = torch.zeros(())
        return self.loss((audio, [log_s, log_s * 0.5], [log_det_W, log_det_W]))


WN_CONFIG = dict(n_layers=2, n_channels=8, kernel_size=3)
flow = torch.compile(AffineCoupling(8, 4, WN_CONFIG))


def make():
    torch.manual_seed(0)
    m = AffineCoupling(8, 4, WN_CONFIG)
    with torch.no_grad():
        m.WN.end.weight.normal_(0, 0.1)
    return m, [(torch.randn(2, 8, 6), torch.randn(2, 4, 6))]
