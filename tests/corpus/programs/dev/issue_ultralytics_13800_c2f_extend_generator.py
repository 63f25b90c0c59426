"""YOLOv8 C2f: `y.extend(m(y[-1]) for m in self.m)`, a generator that reads the list it is extending.

Source: https://github.com/ultralytics/ultralytics/issues/13800 (ultralytics/nn/modules/block.py C2f / Bottleneck,
ultralytics/nn/modules/conv.py autopad / Conv)
Kept: autopad, Conv with its class-level `default_act` and the `act is True` / isinstance choice, Bottleneck's
`self.add` shortcut, C2f.forward and forward_split exactly as in the library, and the reporter's setting (an
eval detection backbone compiled with `torch.compile` for validation on coco128).
Simplified: the YAML-built DetectionModel is a fixed three-stage backbone with a 1x1 conv head; no Detect
head or post-processing; tiny channel counts.
"""
import torch
import torch.nn as nn


def autopad(k, p=None, d=1):  # kernel, padding, dilation
    """Pad to 'same' shape outputs."""
    if d > 1:
        k = d * (k - 1) + 1 if isinstance(k, int) else [d * (x - 1) + 1 for x in k]  # actual kernel-size
    if p is None:
        p = k // 2 if isinstance(k, int) else [x // 2 for x in k]  # auto-pad
    return p


class Conv(nn.Module):
    """Standard convolution with args(ch_in, ch_out, kernel, stride, padding, groups, dilation, activation)."""

    default_act = nn.SiLU()  # default activation

    def __init__(self, c1, c2, k=1, s=1, p=None, g=1, d=1, act=True):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, autopad(k, p, d), groups=g, dilation=d, bias=False)
        self.bn = nn.BatchNorm2d(c2)
        self.act = self.default_act if act is True else act if isinstance(act, nn.Module) else nn.Identity()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))

    def forward_fuse(self, x):
        return self.act(self.conv(x))


class Bottleneck(nn.Module):
    """Standard bottleneck."""

    def __init__(self, c1, c2, shortcut=True, g=1, k=(3, 3), e=0.5):
        super().__init__()
        c_ = int(c2 * e)  # hidden channels
        self.cv1 = Conv(c1, c_, k[0], 1)
        self.cv2 = Conv(c_, c2, k[1], 1, g=g)
        self.add = shortcut and c1 == c2

    def forward(self, x):
        return x + self.cv2(self.cv1(x)) if self.add else self.cv2(self.cv1(x))


class C2f(nn.Module):
    """Faster Implementation of CSP Bottleneck with 2 convolutions."""

    def __init__(self, c1, c2, n=1, shortcut=False, g=1, e=0.5):
        super().__init__()
        self.c = int(c2 * e)  # hidden channels
        self.cv1 = Conv(c1, 2 * self.c, 1, 1)
        self.cv2 = Conv((2 + n) * self.c, c2, 1)  # optional act=FReLU(c2)
        self.m = nn.ModuleList(Bottleneck(self.c, self.c, shortcut, g, k=((3, 3), (3, 3)), e=1.0) for _ in range(n))

    def forward(self, x):
        """Forward pass through C2f layer."""
        y = list(self.cv1(x).chunk(2, 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))

    def forward_split(self, x):
        """Forward pass using split() instead of chunk()."""
        y = list(self.cv1(x).split((self.c, self.c), 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))


class TinyBackbone(nn.Module):
    def __init__(self, nc=4):
        super().__init__()
        self.model = nn.Sequential(
            Conv(3, 8, 3, 2),
            C2f(8, 8, n=2, shortcut=True),
            Conv(8, 16, 3, 2),
            C2f(16, 16, n=1, shortcut=False),
            nn.Conv2d(16, nc, 1),
        )

    def forward(self, x):
        return self.model(x)


def validate():
    model = TinyBackbone().eval()
    model = torch.compile(model)
    with torch.no_grad():
        return model(torch.randn(1, 3, 32, 32))


def make():
    torch.manual_seed(0)
    return TinyBackbone().eval(), [(torch.randn(1, 3, 32, 32),)]
