"""GM507 bad: a VAE's loss takes the KL term from `torch.distributions.kl_divergence` inside the compiled step."""
import torch
from torch import nn
from torch.distributions import Normal, kl_divergence


class VAE(nn.Module):
    def __init__(self, dim: int = 6, latent: int = 2) -> None:
        super().__init__()
        self.encoder = nn.Linear(dim, 2 * latent)
        self.decoder = nn.Linear(latent, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mu, log_std = self.encoder(x).chunk(2, dim=-1)
        posterior = Normal(mu, log_std.exp())
        prior = Normal(torch.zeros_like(mu), torch.ones_like(mu))
        z = posterior.rsample()
        reconstruction = ((self.decoder(z) - x) ** 2).sum(-1)
        kl = kl_divergence(posterior, prior).sum(-1)
        return (reconstruction + kl).mean()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return VAE(), [(torch.randn(4, 6),)]


compiled = torch.compile(VAE())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
