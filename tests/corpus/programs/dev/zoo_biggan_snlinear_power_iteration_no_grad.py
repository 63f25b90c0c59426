"""BigGAN spectral norm: SN.W_ runs power_iteration (Python lists of singular vectors, Gram-Schmidt, `with torch.no_grad()` and in-place `u_[i][:] = u` buffer writes when training) inside SNConv2d/SNLinear/SNEmbedding forwards of a projection discriminator.

Source: ajbrock/BigGAN-PyTorch@98459431a5d618d644d54cd1e9fceb1e5045648d:layers.py:16-135
Also: BigGAN.py:Discriminator.forward (sum pooling, linear + projection embed).
Kept: proj, gram_schmidt, power_iteration, the SN mixin (u/sv properties via
getattr on 'u%d' buffers, `update=self.training`, sv logging under no_grad),
SNConv2d, SNLinear, SNEmbedding verbatim; the discriminator's block loop and
projection head. The discriminator is compiled with `torch.compile(D)`.
Simplified: DBlocks replaced by two SNConv2d + ReLU layers (ch 4), 8x8 input,
3 classes, num_svs=2 so the Gram-Schmidt loop runs; no SyncBN import.
"""
import functools

import torch
import torch.nn as nn
import torch.nn.functional as F


# Projection of x onto y
def proj(x, y):
  return torch.mm(y, x.t()) * y / torch.mm(y, y.t())


# Orthogonalize x wrt list of vectors ys
def gram_schmidt(x, ys):
  for y in ys:
    x = x - proj(x, y)
  return x


# Apply num_itrs steps of the power method to estimate top N singular values.
def power_iteration(W, u_, update=True, eps=1e-12):
  # Lists holding singular vectors and values
  us, vs, svs = [], [], []
  for i, u in enumerate(u_):
    # Run one step of the power iteration
    with torch.no_grad():
      v = torch.matmul(u, W)
      # Run Gram-Schmidt to subtract components of all other singular vectors
      v = F.normalize(gram_schmidt(v, vs), eps=eps)
      # Add to the list
      vs += [v]
      # Update the other singular vector
      u = torch.matmul(v, W.t())
      # Run Gram-Schmidt to subtract components of all other singular vectors
      u = F.normalize(gram_schmidt(u, us), eps=eps)
      # Add to the list
      us += [u]
      if update:
        u_[i][:] = u
    # Compute this singular value and add it to the list
    svs += [torch.squeeze(torch.matmul(torch.matmul(v, W.t()), u.t()))]
  return svs, us, vs


# Spectral normalization base class
class SN(object):
  def __init__(self, num_svs, num_itrs, num_outputs, transpose=False, eps=1e-12):
    # Number of power iterations per step
    self.num_itrs = num_itrs
    # Number of singular values
    self.num_svs = num_svs
    # Transposed?
    self.transpose = transpose
    # Epsilon value for avoiding divide-by-0
    self.eps = eps
    # Register a singular vector for each sv
    for i in range(self.num_svs):
      self.register_buffer('u%d' % i, torch.randn(1, num_outputs))
      self.register_buffer('sv%d' % i, torch.ones(1))

  # Singular vectors (u side)
  @property
  def u(self):
    return [getattr(self, 'u%d' % i) for i in range(self.num_svs)]

  # Singular values;
  # note that these buffers are just for logging and are not used in training.
  @property
  def sv(self):
   return [getattr(self, 'sv%d' % i) for i in range(self.num_svs)]

  # Compute the spectrally-normalized weight
  def W_(self):
    W_mat = self.weight.view(self.weight.size(0), -1)
    if self.transpose:
      W_mat = W_mat.t()
    # Apply num_itrs power iterations
    for _ in range(self.num_itrs):
      svs, us, vs = power_iteration(W_mat, self.u, update=self.training, eps=self.eps)
    # Update the svs
    if self.training:
      with torch.no_grad(): # Make sure to do this in a no_grad() context or you'll get memory leaks!
        for i, sv in enumerate(svs):
          self.sv[i][:] = sv
    return self.weight / svs[0]


# 2D Conv layer with spectral norm
class SNConv2d(nn.Conv2d, SN):
  def __init__(self, in_channels, out_channels, kernel_size, stride=1,
             padding=0, dilation=1, groups=1, bias=True,
             num_svs=1, num_itrs=1, eps=1e-12):
    nn.Conv2d.__init__(self, in_channels, out_channels, kernel_size, stride,
                     padding, dilation, groups, bias)
    SN.__init__(self, num_svs, num_itrs, out_channels, eps=eps)
  def forward(self, x):
    return F.conv2d(x, self.W_(), self.bias, self.stride,
                    self.padding, self.dilation, self.groups)


# Linear layer with spectral norm
class SNLinear(nn.Linear, SN):
  def __init__(self, in_features, out_features, bias=True,
               num_svs=1, num_itrs=1, eps=1e-12):
    nn.Linear.__init__(self, in_features, out_features, bias)
    SN.__init__(self, num_svs, num_itrs, out_features, eps=eps)
  def forward(self, x):
    return F.linear(x, self.W_(), self.bias)


# Embedding layer with spectral norm
class SNEmbedding(nn.Embedding, SN):
  def __init__(self, num_embeddings, embedding_dim, padding_idx=None,
               max_norm=None, norm_type=2, scale_grad_by_freq=False,
               sparse=False, _weight=None,
               num_svs=1, num_itrs=1, eps=1e-12):
    nn.Embedding.__init__(self, num_embeddings, embedding_dim, padding_idx,
                          max_norm, norm_type, scale_grad_by_freq,
                          sparse, _weight)
    SN.__init__(self, num_svs, num_itrs, num_embeddings, eps=eps)
  def forward(self, x):
    return F.embedding(x, self.W_())


class Discriminator(nn.Module):
  def __init__(self, D_ch=4, n_classes=3, num_D_SVs=2, num_D_SV_itrs=1, SN_eps=1e-8):
    super(Discriminator, self).__init__()
    self.activation = nn.ReLU(inplace=False)
    self.which_conv = functools.partial(SNConv2d, kernel_size=3, padding=1,
                                        num_svs=num_D_SVs, num_itrs=num_D_SV_itrs, eps=SN_eps)
    self.which_linear = functools.partial(SNLinear, num_svs=num_D_SVs, num_itrs=num_D_SV_itrs, eps=SN_eps)
    self.which_embedding = functools.partial(SNEmbedding, num_svs=num_D_SVs, num_itrs=num_D_SV_itrs, eps=SN_eps)
    self.blocks = nn.ModuleList([
        nn.ModuleList([self.which_conv(3, D_ch), nn.ReLU()]),
        nn.ModuleList([self.which_conv(D_ch, 2 * D_ch)]),
    ])
    self.linear = self.which_linear(2 * D_ch, 1)
    self.embed = self.which_embedding(n_classes, 2 * D_ch)

  def forward(self, x, y=None):
    # Stick x into h for cleaner for loops without flow control
    h = x
    # Loop over blocks
    for index, blocklist in enumerate(self.blocks):
      for block in blocklist:
        h = block(h)
    # Apply global sum pooling as in SN-GAN
    h = torch.sum(self.activation(h), [2, 3])
    # Get initial class-unconditional output
    out = self.linear(h)
    # Get projection of final featureset onto class vectors and add to evidence
    out = out + torch.sum(self.embed(y) * h, 1, keepdim=True)
    return out


def build_discriminator():
  D = Discriminator()
  return torch.compile(D)


def make():
  torch.manual_seed(0)
  D = Discriminator()
  x = torch.randn(2, 3, 8, 8)
  y = torch.tensor([0, 2])
  return D, [(x, y)]
