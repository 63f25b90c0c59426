"""EDM training loss: EDMLoss draws log-normal sigmas, weights the denoising error and calls EDMPrecond, whose class_labels line picks None / zeros / reshaped labels from config and argument.

Source: NVlabs/edm@008a4e5316c8e3bfe61a62f874bddba254295afb:training/loss.py:66-83
Also: training/networks.py:632-674 (EDMPrecond), training/training_loop.py:124-132
(the accumulation step: loss_fn(net=ddp, images=..., labels=..., augment_pipe=...),
then loss.sum().mul(loss_scaling / batch_gpu_total)).
Kept: EDMLoss verbatim (a plain class with __call__), EDMPrecond verbatim with the
globals()[model_type] lookup and the fp16 dtype switch, the training-loop call
shape up to the scaled sum.
Simplified: the U-Net is a tiny noise-conditioned conv stand-in; no augment
pipe, no backward; the compiled entry is the accumulation step function.
"""
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


class EDMLoss:
    def __init__(self, P_mean=-1.2, P_std=1.2, sigma_data=0.5):
        self.P_mean = P_mean
        self.P_std = P_std
        self.sigma_data = sigma_data

    def __call__(self, net, images, labels=None, augment_pipe=None):
        rnd_normal = torch.randn([images.shape[0], 1, 1, 1], device=images.device)
        sigma = (rnd_normal * self.P_std + self.P_mean).exp()
        weight = (sigma ** 2 + self.sigma_data ** 2) / (sigma * self.sigma_data) ** 2
        y, augment_labels = augment_pipe(images) if augment_pipe is not None else (images, None)
        n = torch.randn_like(y) * sigma
        D_yn = net(y + n, sigma, labels, augment_labels=augment_labels)
        loss = weight * ((D_yn - y) ** 2)
        return loss


loss_fn = EDMLoss()


@torch.compile
def accumulate_step(net, images, labels, loss_scaling=1, batch_gpu_total=2):
    loss = loss_fn(net=net, images=images, labels=labels, augment_pipe=None)
    return loss.sum().mul(loss_scaling / batch_gpu_total)


def make():
    torch.manual_seed(0)
    cond = EDMPrecond(img_resolution=4, img_channels=1, label_dim=3)
    uncond = EDMPrecond(img_resolution=4, img_channels=1, label_dim=0)
    images = torch.randn(2, 1, 4, 4)
    labels = torch.eye(3)[[1, 2]]
    return accumulate_step._torchdynamo_orig_callable, [
        (cond, images, labels),
        (cond, images, None, 4.0, 2),
        (uncond, images, None),
    ]
