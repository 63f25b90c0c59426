"""Grad-TTS inference forward: `y_max_length = int(y_lengths.max())` from predicted durations, `fix_len_compatibility` loops `while True` on the Python int, then alignment via `generate_path` and a reverse-diffusion sampler.

Source: huawei-noah/Speech-Backbones@5611ea87a7b369088983371b6f1313bb764b9953:Grad-TTS/model/tts.py:46-93
Also: Grad-TTS/model/utils.py@e1bab216f6bd866990ac0234c732591a8facb43b (sequence_mask with
`torch.arange(int(max_length))`, fix_len_compatibility, convert_pad_shape,
generate_path); Grad-TTS/model/base.py (BaseModule.relocate_input);
Grad-TTS/model/diffusion.py (Diffusion.reverse_diffusion's Euler loop).
Kept: GradTTS.forward verbatim with @torch.no_grad(), relocate_input, the utils
verbatim, the beta schedule and the stoc flag of reverse_diffusion.
Simplified: TextEncoder is embedding + conv with mu/logw projections; the
score estimator is one conv; 2 speakers, 4 mel features.
"""
import torch


def sequence_mask(length, max_length=None):
    if max_length is None:
        max_length = length.max()
    x = torch.arange(int(max_length), dtype=length.dtype, device=length.device)
    return x.unsqueeze(0) < length.unsqueeze(1)


def fix_len_compatibility(length, num_downsamplings_in_unet=2):
    while True:
        if length % (2**num_downsamplings_in_unet) == 0:
            return length
        length += 1


def convert_pad_shape(pad_shape):
    l = pad_shape[::-1]
    pad_shape = [item for sublist in l for item in sublist]
    return pad_shape


def generate_path(duration, mask):
    device = duration.device

    b, t_x, t_y = mask.shape
    cum_duration = torch.cumsum(duration, 1)
    path = torch.zeros(b, t_x, t_y, dtype=mask.dtype).to(device=device)

    cum_duration_flat = cum_duration.view(b * t_x)
    path = sequence_mask(cum_duration_flat, t_y).to(mask.dtype)
    path = path.view(b, t_x, t_y)
    path = path - torch.nn.functional.pad(path, convert_pad_shape([[0, 0], 
                                          [1, 0], [0, 0]]))[:, :-1]
    path = path * mask
    return path


class BaseModule(torch.nn.Module):
    def __init__(self):
        super(BaseModule, self).__init__()

    def relocate_input(self, x: list):
        device = next(self.parameters()).device
        for i in range(len(x)):
            if isinstance(x[i], torch.Tensor) and x[i].device != device:
                x[i] = x[i].to(device)
        return x


class TextEncoder(BaseModule):
    def __init__(self, n_vocab, n_feats, n_channels, spk_emb_dim, n_spks):
        super().__init__()
        self.n_spks = n_spks
        self.emb = torch.nn.Embedding(n_vocab, n_channels)
        self.prenet = torch.nn.Conv1d(n_channels, n_channels, 3, padding=1)
        in_ch = n_channels + (spk_emb_dim if n_spks > 1 else 0)
        self.proj_m = torch.nn.Conv1d(in_ch, n_feats, 1)
        self.proj_w = torch.nn.Conv1d(in_ch, 1, 1)

    def forward(self, x, x_lengths, spk=None):
        x = self.emb(x).transpose(1, -1)
        x_mask = torch.unsqueeze(sequence_mask(x_lengths, x.size(2)), 1).to(x.dtype)
        x = torch.relu(self.prenet(x * x_mask)) * x_mask
        if self.n_spks > 1:
            x = torch.cat([x, spk.unsqueeze(-1).repeat(1, 1, x.shape[-1])], dim=1)
        mu = self.proj_m(x) * x_mask
        logw = self.proj_w(x.detach()) * x_mask
        return mu, logw, x_mask


def get_noise(t, beta_init, beta_term, cumulative=False):
    if cumulative:
        noise = beta_init*t + 0.5*(beta_term - beta_init)*(t**2)
    else:
        noise = beta_init + (beta_term - beta_init)*t
    return noise


class Diffusion(BaseModule):
    def __init__(self, n_feats, beta_min=0.05, beta_max=20):
        super().__init__()
        self.beta_min = beta_min
        self.beta_max = beta_max
        self.estimator = torch.nn.Conv1d(2 * n_feats + 1, n_feats, 1)

    @torch.no_grad()
    def reverse_diffusion(self, z, mask, mu, n_timesteps, stoc=False, spk=None):
        h = 1.0 / n_timesteps
        xt = z * mask
        for i in range(n_timesteps):
            t = (1.0 - (i + 0.5)*h) * torch.ones(z.shape[0], dtype=z.dtype, device=z.device)
            time = t.unsqueeze(-1).unsqueeze(-1)
            noise_t = get_noise(time, self.beta_min, self.beta_max, cumulative=False)
            score = self.estimator(torch.cat([xt, mu, time.expand(-1, 1, xt.shape[-1])], 1)) * mask
            if stoc:  # adds stochastic term
                dxt_det = 0.5 * (mu - xt) - score
                dxt_det = dxt_det * noise_t * h
                dxt_stoc = torch.randn(z.shape, dtype=z.dtype, device=z.device, requires_grad=False)
                dxt_stoc = dxt_stoc * torch.sqrt(noise_t * h)
                dxt = dxt_det + dxt_stoc
            else:
                dxt = 0.5 * (mu - xt - score)
                dxt = dxt * noise_t * h
            xt = (xt - dxt) * mask
        return xt

    @torch.no_grad()
    def forward(self, z, mask, mu, n_timesteps, stoc=False, spk=None):
        return self.reverse_diffusion(z, mask, mu, n_timesteps, stoc, spk)


class GradTTS(BaseModule):
    def __init__(self, n_vocab, n_spks, spk_emb_dim, n_enc_channels, n_feats, beta_min, beta_max):
        super(GradTTS, self).__init__()
        self.n_vocab = n_vocab
        self.n_spks = n_spks
        self.spk_emb_dim = spk_emb_dim
        self.n_enc_channels = n_enc_channels
        self.n_feats = n_feats
        self.beta_min = beta_min
        self.beta_max = beta_max

        if n_spks > 1:
            self.spk_emb = torch.nn.Embedding(n_spks, spk_emb_dim)
        self.encoder = TextEncoder(n_vocab, n_feats, n_enc_channels, spk_emb_dim, n_spks)
        self.decoder = Diffusion(n_feats, beta_min, beta_max)

    @torch.no_grad()
    def forward(self, x, x_lengths, n_timesteps, temperature=1.0, stoc=False, spk=None, length_scale=1.0):
        x, x_lengths = self.relocate_input([x, x_lengths])

        if self.n_spks > 1:
            # Get speaker embedding
            spk = self.spk_emb(spk)

        # Get encoder_outputs `mu_x` and log-scaled token durations `logw`
        mu_x, logw, x_mask = self.encoder(x, x_lengths, spk)

        w = torch.exp(logw) * x_mask
        w_ceil = torch.ceil(w) * length_scale
        y_lengths = torch.clamp_min(torch.sum(w_ceil, [1, 2]), 1).long()
        y_max_length = int(y_lengths.max())
        y_max_length_ = fix_len_compatibility(y_max_length)

        # Using obtained durations `w` construct alignment map `attn`
        y_mask = sequence_mask(y_lengths, y_max_length_).unsqueeze(1).to(x_mask.dtype)
        attn_mask = x_mask.unsqueeze(-1) * y_mask.unsqueeze(2)
        attn = generate_path(w_ceil.squeeze(1), attn_mask.squeeze(1)).unsqueeze(1)

        # Align encoded text and get mu_y
        mu_y = torch.matmul(attn.squeeze(1).transpose(1, 2), mu_x.transpose(1, 2))
        mu_y = mu_y.transpose(1, 2)
        encoder_outputs = mu_y[:, :, :y_max_length]

        # Sample latent representation from terminal distribution N(mu_y, I)
        z = mu_y + torch.randn_like(mu_y, device=mu_y.device) / temperature
        # Generate sample by performing reverse dynamics
        decoder_outputs = self.decoder(z, y_mask, mu_y, n_timesteps, stoc, spk)
        decoder_outputs = decoder_outputs[:, :, :y_max_length]

        return encoder_outputs, decoder_outputs, attn[:, :, :y_max_length]


def build_generator():
    generator = GradTTS(10, 2, 4, 8, 4, 0.05, 20.0).eval()
    return torch.compile(generator)


def make():
    torch.manual_seed(0)
    generator = GradTTS(10, 2, 4, 8, 4, 0.05, 20.0).eval()
    with torch.no_grad():
        generator.encoder.proj_w.bias.fill_(0.5)
    x = torch.randint(0, 10, (2, 5))
    x_lengths = torch.tensor([5, 4])
    spk = torch.tensor([0, 1])
    return generator, [(x, x_lengths, 3, 1.5, False, spk, 1.0), (x[:1], x_lengths[:1], 2, 1.0, True, spk[:1], 0.91)]
