"""nerf_pl NeRFSystem.forward: chunked render_rays, coarse + fine with sample_pdf.

Source: kwea123/nerf_pl@0bb57e0046a3046930108b13c5daf8b8e581e889:models/rendering.py:14-226
Also: kwea123/nerf_pl@2550ba0204995b89f1d4a70558564bd889a5ceec:models/nerf.py:4-113 (Embedding, NeRF)
and the chunked forward of train.py (NeRFSystem.forward, defaultdict of lists, torch.cat).
Kept: batched_inference's list comprehension, sample_pdf's masked assignment on denom,
torch.repeat_interleave of the direction embedding, perturb / use_disp / white_back plumbing,
the nested inference() closure, the defaultdict results and the chunk loop over rays.
Simplified: `torchsearchsorted.searchsorted(cdf, u, side='right')` is torch.searchsorted(...,
right=True) (what the package wraps); hparams is a small class; NeRF is D=4, W=32, skips=[2];
N_freqs 4 / 2; no LightningModule.
"""
from collections import defaultdict

import torch
from torch import nn


class Embedding(nn.Module):
    def __init__(self, in_channels, N_freqs, logscale=True):
        super(Embedding, self).__init__()
        self.N_freqs = N_freqs
        self.in_channels = in_channels
        self.funcs = [torch.sin, torch.cos]
        self.out_channels = in_channels * (len(self.funcs) * N_freqs + 1)

        if logscale:
            self.freq_bands = 2 ** torch.linspace(0, N_freqs - 1, N_freqs)
        else:
            self.freq_bands = torch.linspace(1, 2 ** (N_freqs - 1), N_freqs)

    def forward(self, x):
        out = [x]
        for freq in self.freq_bands:
            for func in self.funcs:
                out += [func(freq * x)]

        return torch.cat(out, -1)


class NeRF(nn.Module):
    def __init__(self, D=4, W=32, in_channels_xyz=27, in_channels_dir=15, skips=[2]):
        super(NeRF, self).__init__()
        self.D = D
        self.W = W
        self.in_channels_xyz = in_channels_xyz
        self.in_channels_dir = in_channels_dir
        self.skips = skips

        for i in range(D):
            if i == 0:
                layer = nn.Linear(in_channels_xyz, W)
            elif i in skips:
                layer = nn.Linear(W + in_channels_xyz, W)
            else:
                layer = nn.Linear(W, W)
            layer = nn.Sequential(layer, nn.ReLU(True))
            setattr(self, f"xyz_encoding_{i+1}", layer)
        self.xyz_encoding_final = nn.Linear(W, W)

        self.dir_encoding = nn.Sequential(nn.Linear(W + in_channels_dir, W // 2), nn.ReLU(True))

        self.sigma = nn.Linear(W, 1)
        self.rgb = nn.Sequential(nn.Linear(W // 2, 3), nn.Sigmoid())

    def forward(self, x):
        input_xyz, input_dir = torch.split(x, [self.in_channels_xyz, self.in_channels_dir], dim=-1)

        xyz_ = input_xyz
        for i in range(self.D):
            if i in self.skips:
                xyz_ = torch.cat([input_xyz, xyz_], -1)
            xyz_ = getattr(self, f"xyz_encoding_{i+1}")(xyz_)

        sigma = self.sigma(xyz_)
        xyz_encoding_final = self.xyz_encoding_final(xyz_)

        dir_encoding_input = torch.cat([xyz_encoding_final, input_dir], -1)
        dir_encoding = self.dir_encoding(dir_encoding_input)
        rgb = self.rgb(dir_encoding)

        out = torch.cat([rgb, sigma], -1)

        return out


def batched_inference(model, inputs, chunk=1024 * 32):
    B = inputs.shape[0]
    out_chunks = [model(inputs[i:i + chunk]) for i in range(0, B, chunk)]
    out = torch.cat(out_chunks, 0)

    return out


def sample_pdf(bins, weights, N_importance, det=False, eps=1e-5):
    N_rays, N_samples_ = weights.shape
    weights = weights + eps  # prevent division by zero (don't do inplace op!)
    pdf = weights / torch.sum(weights, -1, keepdim=True)
    cdf = torch.cumsum(pdf, -1)
    cdf = torch.cat([torch.zeros_like(cdf[:, :1]), cdf], -1)

    if det:
        u = torch.linspace(0, 1, N_importance, device=bins.device)
        u = u.expand(N_rays, N_importance)
    else:
        u = torch.rand(N_rays, N_importance, device=bins.device)
    u = u.contiguous()

    inds = torch.searchsorted(cdf, u, right=True)
    below = torch.clamp_min(inds - 1, 0)
    above = torch.clamp_max(inds, N_samples_)

    inds_sampled = torch.stack([below, above], -1).view(N_rays, 2 * N_importance)
    cdf_g = torch.gather(cdf, 1, inds_sampled).view(N_rays, N_importance, 2)
    bins_g = torch.gather(bins, 1, inds_sampled).view(N_rays, N_importance, 2)

    denom = cdf_g[..., 1] - cdf_g[..., 0]
    denom[denom < eps] = 1  # denom equals 0 means a bin has weight 0

    samples = bins_g[..., 0] + (u - cdf_g[..., 0]) / denom * (bins_g[..., 1] - bins_g[..., 0])
    return samples


def render_rays(models, embeddings, rays, N_samples=64, use_disp=False, perturb=0,
                noise_std=1, N_importance=0, chunk=1024 * 32, white_back=False):

    def inference(model, embedding_xyz, embedding_dir, xyz_, dir_, z_vals):
        N_samples_ = xyz_.shape[1]
        xyz_ = xyz_.view(-1, 3)
        xyz_embedded = embedding_xyz(xyz_)
        dir_normalized = dir_ / torch.norm(dir_, dim=1, keepdim=True)
        dir_embedded = embedding_dir(dir_normalized)
        dir_embedded = torch.repeat_interleave(dir_embedded, repeats=N_samples_, dim=0)

        xyzdir_embedded = torch.cat([xyz_embedded, dir_embedded], 1)

        rgbsigma = batched_inference(model, xyzdir_embedded, chunk)
        rgbsigma = rgbsigma.view(N_rays, N_samples_, 4)

        rgbs = rgbsigma[..., :3]
        sigmas = rgbsigma[..., 3]
        deltas = z_vals[:, 1:] - z_vals[:, :-1]
        delta_inf = 1e10 * torch.ones_like(deltas[:, :1])
        deltas = torch.cat([deltas, delta_inf], -1)

        deltas = deltas * torch.norm(dir_.unsqueeze(1), dim=-1)

        noise = torch.randn(sigmas.shape, device=sigmas.device) * noise_std

        alphas = 1 - torch.exp(-deltas * torch.relu(sigmas + noise))
        alphas_shifted = torch.cat([torch.ones_like(alphas[:, :1]), 1 - alphas + 1e-10], -1)
        weights = alphas * torch.cumprod(alphas_shifted, -1)[:, :-1]
        weights_sum = weights.sum(1)

        rgb_final = torch.sum(weights.unsqueeze(-1) * rgbs, -2)
        depth_final = torch.sum(weights * z_vals, -1)

        if white_back:
            rgb_final = rgb_final + 1 - weights_sum.unsqueeze(-1)

        return rgb_final, depth_final, weights

    model_coarse = models[0]
    embedding_xyz = embeddings[0]
    embedding_dir = embeddings[1]

    N_rays = rays.shape[0]
    rays_o, rays_d = rays[:, 0:3], rays[:, 3:6]
    near, far = rays[:, 6:7], rays[:, 7:8]

    z_steps = torch.linspace(0, 1, N_samples, device=rays.device)
    if not use_disp:
        z_vals = near * (1 - z_steps) + far * z_steps
    else:
        z_vals = 1 / (1 / near * (1 - z_steps) + 1 / far * z_steps)

    z_vals = z_vals.expand(N_rays, N_samples)

    if perturb > 0:
        z_vals_mid = 0.5 * (z_vals[:, :-1] + z_vals[:, 1:])
        upper = torch.cat([z_vals_mid, z_vals[:, -1:]], -1)
        lower = torch.cat([z_vals[:, :1], z_vals_mid], -1)

        perturb_rand = perturb * torch.rand(z_vals.shape, device=rays.device)
        z_vals = lower + (upper - lower) * perturb_rand

    xyz_coarse_sampled = rays_o.unsqueeze(1) + rays_d.unsqueeze(1) * z_vals.unsqueeze(2)

    rgb_coarse, depth_coarse, weights_coarse = inference(
        model_coarse, embedding_xyz, embedding_dir, xyz_coarse_sampled, rays_d, z_vals)

    result = {'rgb_coarse': rgb_coarse,
              'depth_coarse': depth_coarse,
              'opacity_coarse': weights_coarse.sum(1)}

    if N_importance > 0:
        z_vals_mid = 0.5 * (z_vals[:, :-1] + z_vals[:, 1:])
        z_vals_ = sample_pdf(z_vals_mid, weights_coarse[:, 1:-1],
                             N_importance, det=(perturb == 0)).detach()

        z_vals, _ = torch.sort(torch.cat([z_vals, z_vals_], -1), -1)

        xyz_fine_sampled = rays_o.unsqueeze(1) + rays_d.unsqueeze(1) * z_vals.unsqueeze(2)

        model_fine = models[1]
        rgb_fine, depth_fine, weights_fine = inference(
            model_fine, embedding_xyz, embedding_dir, xyz_fine_sampled, rays_d, z_vals)

        result['rgb_fine'] = rgb_fine
        result['depth_fine'] = depth_fine
        result['opacity_fine'] = weights_fine.sum(1)

    return result


class HParams:
    N_samples = 16
    N_importance = 16
    use_disp = False
    perturb = 1.0
    noise_std = 1.0
    chunk = 32
    white_back = True


class NeRFSystem(nn.Module):
    def __init__(self, hparams):
        super(NeRFSystem, self).__init__()
        self.hparams = hparams
        self.embedding_xyz = Embedding(3, 4)
        self.embedding_dir = Embedding(3, 2)
        self.embeddings = [self.embedding_xyz, self.embedding_dir]

        self.nerf_coarse = NeRF()
        self.models = [self.nerf_coarse]
        if hparams.N_importance > 0:
            self.nerf_fine = NeRF()
            self.models += [self.nerf_fine]

    def forward(self, rays):
        """Do batched inference on rays using chunk."""
        B = rays.shape[0]
        results = defaultdict(list)
        for i in range(0, B, self.hparams.chunk):
            rendered_ray_chunks = render_rays(self.models,
                                              self.embeddings,
                                              rays[i:i + self.hparams.chunk],
                                              self.hparams.N_samples,
                                              self.hparams.use_disp,
                                              self.hparams.perturb,
                                              self.hparams.noise_std,
                                              self.hparams.N_importance,
                                              self.hparams.chunk,
                                              self.hparams.white_back)

            for k, v in rendered_ray_chunks.items():
                results[k] += [v]

        for k, v in results.items():
            results[k] = torch.cat(v, 0)
        return results


system = torch.compile(NeRFSystem(HParams()))


def _rays(n):
    o = torch.randn(n, 3) * 0.1
    d = torch.randn(n, 3)
    near = torch.full((n, 1), 2.0)
    far = torch.full((n, 1), 6.0)
    return torch.cat([o, d, near, far], 1)


def make():
    torch.manual_seed(0)
    rays = _rays(48)
    return NeRFSystem(HParams()), [(rays,)]
