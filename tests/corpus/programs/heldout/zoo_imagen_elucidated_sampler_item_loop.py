"""imagen-pytorch ElucidatedImagen one_unet_sample: the Karras sigma schedule is zipped into (sigma, sigma_next, gamma) tensor triples, each turned into floats with `.item()` inside the sampling loop, then `sigma_next != 0` picks the second-order correction.

Source: lucidrains/imagen-pytorch@c166739b03b06fbc2e7c00116ffc81724626ad08:imagen_pytorch/elucidated_imagen.py:53-76,305-547
Also: imagen_pytorch/elucidated_imagen.py:549-700 (sample: text mask default, per-unet
loop building the shape), imagen_pytorch/imagen_pytorch.py:130-140 (right_pad_dims_to),
1510-1522 (Unet.forward_with_cond_scale).
Kept: Hparams namedtuple, threshold_x_start with torch.quantile, c_skip/c_out/c_in/
c_noise, preconditioned_network_forward (float sigma -> torch.full), sample_schedule,
one_unet_sample without inpainting/video (torch.where gammas with min(...), list(zip(...)),
skip_steps slicing, the `.item()` map, S_noise stochastic step, second-order
correction, self-conditioning plumbing, clamp and unnormalize).
Simplified: tqdm is dropped (plain enumerate); the cascade has one tiny conditional
unet (two convs, a time and a text projection) with imagen's forward_with_cond_scale;
sample keeps only the text_embeds path; einops rearrange becomes view; 3 steps,
1x3x8x8 images.
"""
from collections import namedtuple
from math import sqrt

import torch
import torch.nn.functional as F
from torch import nn

Hparams_fields = [
    'num_sample_steps',
    'sigma_min',
    'sigma_max',
    'sigma_data',
    'rho',
    'P_mean',
    'P_std',
    'S_churn',
    'S_tmin',
    'S_tmax',
    'S_noise'
]

Hparams = namedtuple('Hparams', Hparams_fields)


def exists(val):
    return val is not None


def default(val, d):
    if exists(val):
        return val
    return d() if callable(d) else d


def cast_tuple(val, length = None):
    if isinstance(val, list):
        val = tuple(val)
    output = val if isinstance(val, tuple) else ((val,) * default(length, 1))
    return output


def right_pad_dims_to(x, t):
    padding_dims = x.ndim - t.ndim
    if padding_dims <= 0:
        return t
    return t.view(*t.shape, *((1,) * padding_dims))


def normalize_neg_one_to_one(img):
    return img * 2 - 1


def unnormalize_zero_to_one(normed_img):
    return (normed_img + 1) * 0.5


def log(t, eps = 1e-20):
    return torch.log(t.clamp(min = eps))


class TinyUnet(nn.Module):
    def __init__(self, channels = 3, dim = 8, text_embed_dim = 6, self_cond = False):
        super().__init__()
        self.self_cond = self_cond
        self.channels = channels
        self.init_conv = nn.Conv2d(channels * (2 if self_cond else 1), dim, 3, padding = 1)
        self.to_time = nn.Linear(1, dim)
        self.to_text = nn.Linear(text_embed_dim, dim)
        self.null_text = nn.Parameter(torch.randn(dim))
        self.final_conv = nn.Conv2d(dim, channels, 3, padding = 1)

    def forward_with_cond_scale(
        self,
        *args,
        cond_scale = 1.,
        **kwargs
    ):
        logits = self.forward(*args, **kwargs)

        if cond_scale == 1:
            return logits

        null_logits = self.forward(*args, cond_drop_prob = 1., **kwargs)
        return null_logits + (logits - null_logits) * cond_scale

    def forward(self, x, time, *, text_embeds = None, text_mask = None, self_cond = None, cond_drop_prob = 0.):
        if self.self_cond:
            self_cond = default(self_cond, lambda: torch.zeros_like(x))
            x = torch.cat((x, self_cond), dim = 1)
        h = self.init_conv(x)
        t = self.to_time(time[:, None])
        text = self.to_text(text_embeds).mean(dim = 1)
        if cond_drop_prob == 1.:
            text = self.null_text.expand_as(text)
        h = F.silu(h + (t + text)[:, :, None, None])
        return self.final_conv(h)


class ElucidatedImagen(nn.Module):
    def __init__(
        self,
        unets,
        *,
        image_sizes,
        channels = 3,
        auto_normalize_img = True,
        dynamic_thresholding = True,
        dynamic_thresholding_percentile = 0.95,
        num_sample_steps = 32,
        sigma_min = 0.002,
        sigma_max = 80,
        sigma_data = 0.5,
        rho = 7,
        P_mean = -1.2,
        P_std = 1.2,
        S_churn = 80,
        S_tmin = 0.05,
        S_tmax = 50,
        S_noise = 1.003,
    ):
        super().__init__()
        self.unets = nn.ModuleList(cast_tuple(unets))
        num_unets = len(self.unets)
        self.image_sizes = cast_tuple(image_sizes)
        self.sample_channels = cast_tuple(channels, num_unets)
        self.unconditional = False

        self.right_pad_dims_to_datatype = lambda t: t.view(-1, 1, 1, 1)

        self.normalize_img = normalize_neg_one_to_one if auto_normalize_img else (lambda t: t)
        self.unnormalize_img = unnormalize_zero_to_one if auto_normalize_img else (lambda t: t)

        self.dynamic_thresholding = cast_tuple(dynamic_thresholding, num_unets)
        self.dynamic_thresholding_percentile = dynamic_thresholding_percentile

        hparams = [
            num_sample_steps,
            sigma_min,
            sigma_max,
            sigma_data,
            rho,
            P_mean,
            P_std,
            S_churn,
            S_tmin,
            S_tmax,
            S_noise,
        ]

        hparams = [cast_tuple(hp, num_unets) for hp in hparams]
        self.hparams = [Hparams(*unet_hp) for unet_hp in zip(*hparams)]

    @property
    def device(self):
        return next(self.parameters()).device

    def threshold_x_start(self, x_start, dynamic_threshold = True):
        if not dynamic_threshold:
            return x_start.clamp(-1., 1.)

        s = torch.quantile(
            x_start.reshape(x_start.shape[0], -1).abs(),
            self.dynamic_thresholding_percentile,
            dim = -1
        )

        s.clamp_(min = 1.)
        s = right_pad_dims_to(x_start, s)
        return x_start.clamp(-s, s) / s

    def c_skip(self, sigma_data, sigma):
        return (sigma_data ** 2) / (sigma ** 2 + sigma_data ** 2)

    def c_out(self, sigma_data, sigma):
        return sigma * sigma_data * (sigma_data ** 2 + sigma ** 2) ** -0.5

    def c_in(self, sigma_data, sigma):
        return 1 * (sigma ** 2 + sigma_data ** 2) ** -0.5

    def c_noise(self, sigma):
        return log(sigma) * 0.25

    def preconditioned_network_forward(
        self,
        unet_forward,
        noised_images,
        sigma,
        *,
        sigma_data,
        clamp = False,
        dynamic_threshold = True,
        **kwargs
    ):
        batch, device = noised_images.shape[0], noised_images.device

        if isinstance(sigma, float):
            sigma = torch.full((batch,), sigma, device = device)

        padded_sigma = self.right_pad_dims_to_datatype(sigma)

        net_out = unet_forward(
            self.c_in(sigma_data, padded_sigma) * noised_images,
            self.c_noise(sigma),
            **kwargs
        )

        out = self.c_skip(sigma_data, padded_sigma) * noised_images +  self.c_out(sigma_data, padded_sigma) * net_out

        if not clamp:
            return out

        return self.threshold_x_start(out, dynamic_threshold)

    def sample_schedule(
        self,
        num_sample_steps,
        rho,
        sigma_min,
        sigma_max
    ):
        N = num_sample_steps
        inv_rho = 1 / rho

        steps = torch.arange(num_sample_steps, device = self.device, dtype = torch.float32)
        sigmas = (sigma_max ** inv_rho + steps / (N - 1) * (sigma_min ** inv_rho - sigma_max ** inv_rho)) ** rho

        sigmas = F.pad(sigmas, (0, 1), value = 0.) # last step is sigma value of 0.
        return sigmas

    @torch.no_grad()
    def one_unet_sample(
        self,
        unet,
        shape,
        *,
        unet_number,
        clamp = True,
        dynamic_threshold = True,
        cond_scale = 1.,
        init_images = None,
        skip_steps = None,
        sigma_min = None,
        sigma_max = None,
        **kwargs
    ):
        # get specific sampling hyperparameters for unet

        hp = self.hparams[unet_number - 1]

        sigma_min = default(sigma_min, hp.sigma_min)
        sigma_max = default(sigma_max, hp.sigma_max)

        # get the schedule, which is returned as (sigma, gamma) tuple, and pair up with the next sigma and gamma

        sigmas = self.sample_schedule(hp.num_sample_steps, hp.rho, sigma_min, sigma_max)

        gammas = torch.where(
            (sigmas >= hp.S_tmin) & (sigmas <= hp.S_tmax),
            min(hp.S_churn / hp.num_sample_steps, sqrt(2) - 1),
            0.
        )

        sigmas_and_gammas = list(zip(sigmas[:-1], sigmas[1:], gammas[:-1]))

        # images is noise at the beginning

        init_sigma = sigmas[0]

        images = init_sigma * torch.randn(shape, device = self.device)

        # initializing with an image

        if exists(init_images):
            images += init_images

        # keeping track of x0, for self conditioning if needed

        x_start = None

        # unet kwargs

        unet_kwargs = dict(
            sigma_data = hp.sigma_data,
            clamp = clamp,
            dynamic_threshold = dynamic_threshold,
            cond_scale = cond_scale,
            **kwargs
        )

        # gradually denoise

        initial_step = default(skip_steps, 0)
        sigmas_and_gammas = sigmas_and_gammas[initial_step:]

        total_steps = len(sigmas_and_gammas)

        for ind, (sigma, sigma_next, gamma) in enumerate(sigmas_and_gammas):
            is_last_timestep = ind == (total_steps - 1)

            sigma, sigma_next, gamma = map(lambda t: t.item(), (sigma, sigma_next, gamma))

            eps = hp.S_noise * torch.randn(shape, device = self.device) # stochastic sampling

            sigma_hat = sigma + gamma * sigma
            added_noise = sqrt(sigma_hat ** 2 - sigma ** 2) * eps

            images_hat = images + added_noise

            self_cond = x_start if unet.self_cond else None

            model_output = self.preconditioned_network_forward(
                unet.forward_with_cond_scale,
                images_hat,
                sigma_hat,
                self_cond = self_cond,
                **unet_kwargs
            )

            denoised_over_sigma = (images_hat - model_output) / sigma_hat

            images_next = images_hat + (sigma_next - sigma_hat) * denoised_over_sigma

            # second order correction, if not the last timestep

            has_second_order_correction = sigma_next != 0

            if has_second_order_correction:
                self_cond = model_output if unet.self_cond else None

                model_output_next = self.preconditioned_network_forward(
                    unet.forward_with_cond_scale,
                    images_next,
                    sigma_next,
                    self_cond = self_cond,
                    **unet_kwargs
                )

                denoised_prime_over_sigma = (images_next - model_output_next) / sigma_next
                images_next = images_hat + 0.5 * (sigma_next - sigma_hat) * (denoised_over_sigma + denoised_prime_over_sigma)

            images = images_next

            x_start = model_output if not has_second_order_correction else model_output_next # save model output for self conditioning

        images = images.clamp(-1., 1.)

        return self.unnormalize_img(images)

    @torch.no_grad()
    def sample(
        self,
        text_embeds = None,
        text_masks = None,
        batch_size = 1,
        cond_scale = 1.,
        skip_steps = None,
    ):
        if not self.unconditional:
            assert exists(text_embeds), 'text must be passed in if the network was not trained without text `condition_on_text` must be set to `False` when training'

            text_masks = default(text_masks, lambda: torch.any(text_embeds != 0., dim = -1))
            batch_size = text_embeds.shape[0]

        num_unets = len(self.unets)
        cond_scale = cast_tuple(cond_scale, num_unets)
        skip_steps = cast_tuple(skip_steps, num_unets)

        outputs = []
        img = None

        for unet_number, unet, channel, image_size, dynamic_threshold, unet_cond_scale, unet_skip_steps in zip(range(1, num_unets + 1), self.unets, self.sample_channels, self.image_sizes, self.dynamic_thresholding, cond_scale, skip_steps):
            shape = (batch_size, channel, image_size, image_size)

            img = self.one_unet_sample(
                unet,
                shape,
                unet_number = unet_number,
                text_embeds = text_embeds,
                text_mask = text_masks,
                cond_scale = unet_cond_scale,
                dynamic_threshold = dynamic_threshold,
                skip_steps = unet_skip_steps,
            )

            outputs.append(img)

        return outputs[-1]


def build_imagen():
    unet = TinyUnet(channels = 3, dim = 8, text_embed_dim = 6, self_cond = True)
    return ElucidatedImagen(
        unets = (unet,),
        image_sizes = (8,),
        num_sample_steps = 3,
        sigma_min = 0.002,
        sigma_max = 80,
        S_churn = 40,
        S_tmin = 0.05,
        S_tmax = 50,
    ).eval()


imagen = build_imagen()
sample = torch.compile(imagen.sample)


def make():
    torch.manual_seed(0)
    imagen = build_imagen()
    text_embeds = torch.randn(1, 4, 6)
    return imagen.sample, [(text_embeds,), (text_embeds, None, 1, 3., 1)]
