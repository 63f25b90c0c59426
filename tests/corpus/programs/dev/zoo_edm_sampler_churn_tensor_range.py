"""EDM's Heun sampler: the churn factor is chosen by `S_min <= t_cur <= S_max`, a chained comparison on float64 tensor steps from zip(t_steps[:-1], t_steps[1:]), around EDMPrecond calls.

Source: NVlabs/edm@008a4e5316c8e3bfe61a62f874bddba254295afb:generate.py:25-66
Also: training/networks.py:632-674 (EDMPrecond).
Kept: edm_sampler verbatim (sigma clamp against the net, the rho time-step
discretisation, round_sigma, the churn gamma, Euler step and the `i < num_steps - 1`
second-order correction); EDMPrecond verbatim including the globals()[model_type]
lookup.
Simplified: the U-Net is a tiny noise-conditioned conv stand-in; 3 steps,
2x1x4x4 latents; the compiled entry is edm_sampler itself.
"""
import numpy as np
import torch


class TinyUNet(torch.nn.Module):
    """Stand-in for DhariwalUNet/SongUNet: noise-conditioned convs with optional labels."""
    def __init__(self, img_resolution, in_channels, out_channels, label_dim=0, model_channels=8):
        super().__init__()
        self.label_dim = label_dim
        self.map_noise = torch.nn.Linear(1, model_channels)
        self.map_label = torch.nn.Linear(label_dim, model_channels) if label_dim else None
        self.conv_in = torch.nn.Conv2d(in_channels, model_channels, 3, padding=1)
        self.conv_out = torch.nn.Conv2d(model_channels, out_channels, 3, padding=1)

    def forward(self, x, noise_labels, class_labels, augment_labels=None):
        emb = self.map_noise(noise_labels.reshape(-1, 1))
        if self.map_label is not None:
            emb = emb + self.map_label(class_labels)
        x = self.conv_in(x) + emb.unsqueeze(-1).unsqueeze(-1)
        return self.conv_out(torch.nn.functional.silu(x))


class EDMPrecond(torch.nn.Module):
    def __init__(self,
        img_resolution,                     # Image resolution.
        img_channels,                       # Number of color channels.
        label_dim       = 0,                # Number of class labels, 0 = unconditional.
        use_fp16        = False,            # Execute the underlying model at FP16 precision?
        sigma_min       = 0,                # Minimum supported noise level.
        sigma_max       = float('inf'),     # Maximum supported noise level.
        sigma_data      = 0.5,              # Expected standard deviation of the training data.
        model_type      = 'TinyUNet',       # Class name of the underlying model.
        **model_kwargs,                     # Keyword arguments for the underlying model.
    ):
        super().__init__()
        self.img_resolution = img_resolution
        self.img_channels = img_channels
        self.label_dim = label_dim
        self.use_fp16 = use_fp16
        self.sigma_min = sigma_min
        self.sigma_max = sigma_max
        self.sigma_data = sigma_data
        self.model = globals()[model_type](img_resolution=img_resolution, in_channels=img_channels, out_channels=img_channels, label_dim=label_dim, **model_kwargs)

    def forward(self, x, sigma, class_labels=None, force_fp32=False, **model_kwargs):
        x = x.to(torch.float32)
        sigma = sigma.to(torch.float32).reshape(-1, 1, 1, 1)
        class_labels = None if self.label_dim == 0 else torch.zeros([1, self.label_dim], device=x.device) if class_labels is None else class_labels.to(torch.float32).reshape(-1, self.label_dim)
        dtype = torch.float16 if (self.use_fp16 and not force_fp32 and x.device.type == 'cuda') else torch.float32

        c_skip = self.sigma_data ** 2 / (sigma ** 2 + self.sigma_data ** 2)
        c_out = sigma * self.sigma_data / (sigma ** 2 + self.sigma_data ** 2).sqrt()
        c_in = 1 / (self.sigma_data ** 2 + sigma ** 2).sqrt()
        c_noise = sigma.log() / 4

        F_x = self.model((c_in * x).to(dtype), c_noise.flatten(), class_labels=class_labels, **model_kwargs)
        assert F_x.dtype == dtype
        D_x = c_skip * x + c_out * F_x.to(torch.float32)
        return D_x

    def round_sigma(self, sigma):
        return torch.as_tensor(sigma)


def edm_sampler(
    net, latents, class_labels=None, randn_like=torch.randn_like,
    num_steps=18, sigma_min=0.002, sigma_max=80, rho=7,
    S_churn=0, S_min=0, S_max=float('inf'), S_noise=1,
):
    # Adjust noise levels based on what's supported by the network.
    sigma_min = max(sigma_min, net.sigma_min)
    sigma_max = min(sigma_max, net.sigma_max)

    # Time step discretization.
    step_indices = torch.arange(num_steps, dtype=torch.float64, device=latents.device)
    t_steps = (sigma_max ** (1 / rho) + step_indices / (num_steps - 1) * (sigma_min ** (1 / rho) - sigma_max ** (1 / rho))) ** rho
    t_steps = torch.cat([net.round_sigma(t_steps), torch.zeros_like(t_steps[:1])]) # t_N = 0

    # Main sampling loop.
    x_next = latents.to(torch.float64) * t_steps[0]
    for i, (t_cur, t_next) in enumerate(zip(t_steps[:-1], t_steps[1:])): # 0, ..., N-1
        x_cur = x_next

        # Increase noise temporarily.
        gamma = min(S_churn / num_steps, np.sqrt(2) - 1) if S_min <= t_cur <= S_max else 0
        t_hat = net.round_sigma(t_cur + gamma * t_cur)
        x_hat = x_cur + (t_hat ** 2 - t_cur ** 2).sqrt() * S_noise * randn_like(x_cur)

        # Euler step.
        denoised = net(x_hat, t_hat, class_labels).to(torch.float64)
        d_cur = (x_hat - denoised) / t_hat
        x_next = x_hat + (t_next - t_hat) * d_cur

        # Apply 2nd order correction.
        if i < num_steps - 1:
            denoised = net(x_next, t_next, class_labels).to(torch.float64)
            d_prime = (x_next - denoised) / t_next
            x_next = x_hat + (t_next - t_hat) * (0.5 * d_cur + 0.5 * d_prime)

    return x_next


sampler = torch.compile(edm_sampler, backend="inductor")


def make():
    torch.manual_seed(0)
    net = EDMPrecond(img_resolution=4, img_channels=1, label_dim=3).eval()
    latents = torch.randn(2, 1, 4, 4)
    labels = torch.eye(3)[[0, 2]]
    return edm_sampler, [
        (net, latents, labels, torch.randn_like, 3),
        (net, latents, None, torch.randn_like, 3, 0.002, 80, 7, 40, 0.05, 50, 1.007),
    ]
