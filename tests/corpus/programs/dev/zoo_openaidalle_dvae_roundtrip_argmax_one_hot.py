"""DALL-E dVAE round trip from the usage notebook: `map_pixels` (4-d and dtype validation raising ValueError), Encoder.forward's shape/channel/dtype checks, `torch.argmax(z_logits, axis=1)`, `F.one_hot(z, num_classes=enc.vocab_size).permute(0, 3, 1, 2).float()`, Decoder, `unmap_pixels(torch.sigmoid(x_stats[:, :3]))`; the custom Conv2d picks fp16 weights when `'cuda' in self.w.device.type` else casts the input to float32.

Source: openai/DALL-E@5be4b23:notebooks/usage.ipynb (cells 0 and 3)
Also: dall_e/encoder.py:1-94 (EncoderBlock, Encoder), dall_e/decoder.py:1-94 (DecoderBlock, Decoder),
dall_e/utils.py:1-58 (Conv2d, map_pixels, unmap_pixels).
Kept: the forwards, the Conv2d device/dtype branches, map/unmap_pixels and the notebook's
reconstruction lines verbatim (tab indentation as in the source).
Simplified: the `attr.s` class declarations (the attrs package is not available) become plain
__init__ methods setting the same fields before the original `__attrs_post_init__` bodies, without
the validators; sizes shrunk (n_hid 16, n_init 8, vocab 64, one block per group, 16x16 images);
the notebook's PIL preprocessing and display are dropped (the image tensor goes to map_pixels).
"""
import math

import numpy as np

import torch
import torch.nn as nn
import torch.nn.functional as F

from collections  import OrderedDict
from functools    import partial


# ---- dall_e/utils.py ----
logit_laplace_eps: float = 0.1

class Conv2d(nn.Module):
	def __init__(self, n_in: int, n_out: int, kw: int, use_float16: bool = True,
			device: torch.device = torch.device('cpu'), requires_grad: bool = False) -> None:
		self.n_in, self.n_out, self.kw = n_in, n_out, kw
		self.use_float16, self.device, self.requires_grad = use_float16, device, requires_grad
		self.__attrs_post_init__()

	def __attrs_post_init__(self) -> None:
		super().__init__()

		w = torch.empty((self.n_out, self.n_in, self.kw, self.kw), dtype=torch.float32,
			device=self.device, requires_grad=self.requires_grad)
		w.normal_(std=1 / math.sqrt(self.n_in * self.kw ** 2))

		b = torch.zeros((self.n_out,), dtype=torch.float32, device=self.device,
			requires_grad=self.requires_grad)
		self.w, self.b = nn.Parameter(w), nn.Parameter(b)

	def forward(self, x: torch.Tensor) -> torch.Tensor:
		if self.use_float16 and 'cuda' in self.w.device.type:
			if x.dtype != torch.float16:
				x = x.half()

			w, b = self.w.half(), self.b.half()
		else:
			if x.dtype != torch.float32:
				x = x.float()

			w, b = self.w, self.b

		return F.conv2d(x, w, b, padding=(self.kw - 1) // 2)

def map_pixels(x: torch.Tensor) -> torch.Tensor:
	if len(x.shape) != 4:
		raise ValueError('expected input to be 4d')
	if x.dtype != torch.float:
		raise ValueError('expected input to have type float')

	return (1 - 2 * logit_laplace_eps) * x + logit_laplace_eps

def unmap_pixels(x: torch.Tensor) -> torch.Tensor:
	if len(x.shape) != 4:
		raise ValueError('expected input to be 4d')
	if x.dtype != torch.float:
		raise ValueError('expected input to have type float')

	return torch.clamp((x - logit_laplace_eps) / (1 - 2 * logit_laplace_eps), 0, 1)


# ---- dall_e/encoder.py ----
class EncoderBlock(nn.Module):
	def __init__(self, n_in: int, n_out: int, n_layers: int, device: torch.device = None,
			requires_grad: bool = False) -> None:
		self.n_in, self.n_out, self.n_layers = n_in, n_out, n_layers
		self.device, self.requires_grad = device, requires_grad
		self.__attrs_post_init__()

	def __attrs_post_init__(self) -> None:
		super().__init__()
		self.n_hid = self.n_out // 4
		self.post_gain = 1 / (self.n_layers ** 2)

		make_conv     = partial(Conv2d, device=self.device, requires_grad=self.requires_grad)
		self.id_path  = make_conv(self.n_in, self.n_out, 1) if self.n_in != self.n_out else nn.Identity()
		self.res_path = nn.Sequential(OrderedDict([
				('relu_1', nn.ReLU()),
				('conv_1', make_conv(self.n_in,  self.n_hid, 3)),
				('relu_2', nn.ReLU()),
				('conv_2', make_conv(self.n_hid, self.n_hid, 3)),
				('relu_3', nn.ReLU()),
				('conv_3', make_conv(self.n_hid, self.n_hid, 3)),
				('relu_4', nn.ReLU()),
				('conv_4', make_conv(self.n_hid, self.n_out, 1)),]))

	def forward(self, x: torch.Tensor) -> torch.Tensor:
		return self.id_path(x) + self.post_gain * self.res_path(x)

class Encoder(nn.Module):
	group_count:     int = 4

	def __init__(self, n_hid: int = 256, n_blk_per_group: int = 2, input_channels: int = 3,
			vocab_size: int = 8192, device: torch.device = torch.device('cpu'),
			requires_grad: bool = False, use_mixed_precision: bool = True) -> None:
		self.n_hid, self.n_blk_per_group, self.input_channels = n_hid, n_blk_per_group, input_channels
		self.vocab_size, self.device, self.requires_grad = vocab_size, device, requires_grad
		self.use_mixed_precision = use_mixed_precision
		self.__attrs_post_init__()

	def __attrs_post_init__(self) -> None:
		super().__init__()

		blk_range  = range(self.n_blk_per_group)
		n_layers   = self.group_count * self.n_blk_per_group
		make_conv  = partial(Conv2d, device=self.device, requires_grad=self.requires_grad)
		make_blk   = partial(EncoderBlock, n_layers=n_layers, device=self.device,
				requires_grad=self.requires_grad)

		self.blocks = nn.Sequential(OrderedDict([
			('input', make_conv(self.input_channels, 1 * self.n_hid, 7)),
			('group_1', nn.Sequential(OrderedDict([
				*[(f'block_{i + 1}', make_blk(1 * self.n_hid, 1 * self.n_hid)) for i in blk_range],
				('pool', nn.MaxPool2d(kernel_size=2)),
			]))),
			('group_2', nn.Sequential(OrderedDict([
				*[(f'block_{i + 1}', make_blk(1 * self.n_hid if i == 0 else 2 * self.n_hid, 2 * self.n_hid)) for i in blk_range],
				('pool', nn.MaxPool2d(kernel_size=2)),
			]))),
			('group_3', nn.Sequential(OrderedDict([
				*[(f'block_{i + 1}', make_blk(2 * self.n_hid if i == 0 else 4 * self.n_hid, 4 * self.n_hid)) for i in blk_range],
				('pool', nn.MaxPool2d(kernel_size=2)),
			]))),
			('group_4', nn.Sequential(OrderedDict([
				*[(f'block_{i + 1}', make_blk(4 * self.n_hid if i == 0 else 8 * self.n_hid, 8 * self.n_hid)) for i in blk_range],
			]))),
			('output', nn.Sequential(OrderedDict([
				('relu', nn.ReLU()),
				('conv', make_conv(8 * self.n_hid, self.vocab_size, 1, use_float16=False)),
			]))),
		]))

	def forward(self, x: torch.Tensor) -> torch.Tensor:
		if len(x.shape) != 4:
			raise ValueError(f'input shape {x.shape} is not 4d')
		if x.shape[1] != self.input_channels:
			raise ValueError(f'input has {x.shape[1]} channels but model built for {self.input_channels}')
		if x.dtype != torch.float32:
			raise ValueError('input must have dtype torch.float32')

		return self.blocks(x)


# ---- dall_e/decoder.py ----
class DecoderBlock(nn.Module):
	def __init__(self, n_in: int, n_out: int, n_layers: int, device: torch.device = None,
			requires_grad: bool = False) -> None:
		self.n_in, self.n_out, self.n_layers = n_in, n_out, n_layers
		self.device, self.requires_grad = device, requires_grad
		self.__attrs_post_init__()

	def __attrs_post_init__(self) -> None:
		super().__init__()
		self.n_hid = self.n_out // 4
		self.post_gain = 1 / (self.n_layers ** 2)

		make_conv     = partial(Conv2d, device=self.device, requires_grad=self.requires_grad)
		self.id_path  = make_conv(self.n_in, self.n_out, 1) if self.n_in != self.n_out else nn.Identity()
		self.res_path = nn.Sequential(OrderedDict([
				('relu_1', nn.ReLU()),
				('conv_1', make_conv(self.n_in,  self.n_hid, 1)),
				('relu_2', nn.ReLU()),
				('conv_2', make_conv(self.n_hid, self.n_hid, 3)),
				('relu_3', nn.ReLU()),
				('conv_3', make_conv(self.n_hid, self.n_hid, 3)),
				('relu_4', nn.ReLU()),
				('conv_4', make_conv(self.n_hid, self.n_out, 3)),]))

	def forward(self, x: torch.Tensor) -> torch.Tensor:
		return self.id_path(x) + self.post_gain * self.res_path(x)

class Decoder(nn.Module):
	group_count:     int = 4

	def __init__(self, n_init: int = 128, n_hid: int = 256, n_blk_per_group: int = 2,
			output_channels: int = 3, vocab_size: int = 8192,
			device: torch.device = torch.device('cpu'), requires_grad: bool = False,
			use_mixed_precision: bool = True) -> None:
		self.n_init, self.n_hid, self.n_blk_per_group = n_init, n_hid, n_blk_per_group
		self.output_channels, self.vocab_size = output_channels, vocab_size
		self.device, self.requires_grad, self.use_mixed_precision = device, requires_grad, use_mixed_precision
		self.__attrs_post_init__()

	def __attrs_post_init__(self) -> None:
		super().__init__()

		blk_range  = range(self.n_blk_per_group)
		n_layers   = self.group_count * self.n_blk_per_group
		make_conv  = partial(Conv2d, device=self.device, requires_grad=self.requires_grad)
		make_blk   = partial(DecoderBlock, n_layers=n_layers, device=self.device,
				requires_grad=self.requires_grad)

		self.blocks = nn.Sequential(OrderedDict([
			('input', make_conv(self.vocab_size, self.n_init, 1, use_float16=False)),
			('group_1', nn.Sequential(OrderedDict([
				*[(f'block_{i + 1}', make_blk(self.n_init if i == 0 else 8 * self.n_hid, 8 * self.n_hid)) for i in blk_range],
				('upsample', nn.Upsample(scale_factor=2, mode='nearest')),
			]))),
			('group_2', nn.Sequential(OrderedDict([
				*[(f'block_{i + 1}', make_blk(8 * self.n_hid if i == 0 else 4 * self.n_hid, 4 * self.n_hid)) for i in blk_range],
				('upsample', nn.Upsample(scale_factor=2, mode='nearest')),
			]))),
			('group_3', nn.Sequential(OrderedDict([
				*[(f'block_{i + 1}', make_blk(4 * self.n_hid if i == 0 else 2 * self.n_hid, 2 * self.n_hid)) for i in blk_range],
				('upsample', nn.Upsample(scale_factor=2, mode='nearest')),
			]))),
			('group_4', nn.Sequential(OrderedDict([
				*[(f'block_{i + 1}', make_blk(2 * self.n_hid if i == 0 else 1 * self.n_hid, 1 * self.n_hid)) for i in blk_range],
			]))),
			('output', nn.Sequential(OrderedDict([
				('relu', nn.ReLU()),
				('conv', make_conv(1 * self.n_hid, 2 * self.output_channels, 1)),
			]))),
		]))

	def forward(self, x: torch.Tensor) -> torch.Tensor:
		if len(x.shape) != 4:
			raise ValueError(f'input shape {x.shape} is not 4d')
		if x.shape[1] != self.vocab_size:
			raise ValueError(f'input has {x.shape[1]} channels but model built for {self.vocab_size}')
		if x.dtype != torch.float32:
			raise ValueError('input must have dtype torch.float32')

		return self.blocks(x)


# ---- notebooks/usage.ipynb (cells 0 and 3) ----
@torch.compile
def reconstruct(enc, dec, img):
	x = map_pixels(img)

	z_logits = enc(x)
	z = torch.argmax(z_logits, axis=1)
	z = F.one_hot(z, num_classes=enc.vocab_size).permute(0, 3, 1, 2).float()

	x_stats = dec(z).float()
	x_rec = unmap_pixels(torch.sigmoid(x_stats[:, :3]))
	return x_rec


RAISING_INPUTS = {1: "ValueError"}


def make():
	torch.manual_seed(0)
	dev = torch.device('cpu')
	enc = Encoder(n_hid=16, n_blk_per_group=1, vocab_size=64, device=dev).eval()
	dec = Decoder(n_init=8, n_hid=16, n_blk_per_group=1, vocab_size=64, device=dev).eval()
	img = torch.rand(1, 3, 16, 16)
	return reconstruct._torchdynamo_orig_callable, [
		(enc, dec, img),
		(enc, dec, img[0]),
	]
