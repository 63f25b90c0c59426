"""YOLACT FPN + shared PredictionModules: the FPN walks the levels top-down with `F.interpolate(size=(h, w))` from `convouts[j].size()`, each head reaches its layers through `self.parent[0]`, and `make_priors` rebuilds a Python-list prior table when `self.last_conv_size != (conv_w, conv_h)`, caching it on the module.

Source: dbolya/yolact@041c0127f30f52af441fe9288745c5d2af84d9b9:yolact.py:53-277
Kept: PredictionModule (parent sharing, make_extra lambda, lincomb mask
activation, make_priors with its cache), FPN, and the FPN rewiring plus the
training-mode pass2 loop of Yolact.__init__/forward, all reading the
module-level `cfg`.
Simplified: the timer context managers are gone; the ResNet backbone and the
proto net are not built (the compiled module takes the three selected backbone
feature maps); cfg holds only the fields these classes read; FPN width 8, 3
classes, mask_dim 4, one aspect-ratio list per level.
"""
from itertools import product

import torch
import torch.nn as nn
import torch.nn.functional as F


class _FPNCfg:
    num_features = 8
    interpolation_mode = 'bilinear'
    num_downsample = 1


class _MaskType:
    direct = 0
    lincomb = 1


mask_type = _MaskType()


class _Cfg:
    num_classes = 3
    mask_dim = 4
    mask_type = mask_type.lincomb
    mask_proto_prototypes_as_features = False
    mask_proto_coeff_activation = torch.tanh
    mask_proto_coeff_gate = False
    extra_head_net = None
    use_prediction_module = False
    use_yolo_regressors = False
    head_layer_params = {'kernel_size': 3, 'padding': 1}
    extra_layers = (0, 0, 0)
    share_prediction_module = True
    fpn = _FPNCfg()
    pred_aspect_ratios = [[[1, 0.5, 2]]] * 4
    pred_scales = [[24], [48], [96], [192]]


cfg = _Cfg()


class PredictionModule(nn.Module):
    def __init__(self, in_channels, out_channels=1024, aspect_ratios=[[1]], scales=[1], parent=None):
        super().__init__()

        self.num_classes = cfg.num_classes
        self.mask_dim    = cfg.mask_dim
        self.num_priors  = sum(len(x) for x in aspect_ratios)
        self.parent      = [parent] # Don't include this in the state dict

        if cfg.mask_proto_prototypes_as_features:
            in_channels += self.mask_dim

        if parent is None:
            if cfg.extra_head_net is None:
                out_channels = in_channels

            self.bbox_layer = nn.Conv2d(out_channels, self.num_priors * 4,                **cfg.head_layer_params)
            self.conf_layer = nn.Conv2d(out_channels, self.num_priors * self.num_classes, **cfg.head_layer_params)
            self.mask_layer = nn.Conv2d(out_channels, self.num_priors * self.mask_dim,    **cfg.head_layer_params)

            # What is this ugly lambda doing in the middle of all this clean prediction module code?
            def make_extra(num_layers):
                if num_layers == 0:
                    return lambda x: x
                else:
                    # Looks more complicated than it is. This just creates an array of num_layers alternating conv-relu
                    return nn.Sequential(*sum([[
                        nn.Conv2d(out_channels, out_channels, kernel_size=3, padding=1),
                        nn.ReLU(inplace=True)
                    ] for _ in range(num_layers)], []))

            self.bbox_extra, self.conf_extra, self.mask_extra = [make_extra(x) for x in cfg.extra_layers]

            if cfg.mask_type == mask_type.lincomb and cfg.mask_proto_coeff_gate:
                self.gate_layer = nn.Conv2d(out_channels, self.num_priors * self.mask_dim, kernel_size=3, padding=1)

        self.aspect_ratios = aspect_ratios
        self.scales = scales

        self.priors = None
        self.last_conv_size = None

    def forward(self, x):
        # In case we want to use another module's layers
        src = self if self.parent[0] is None else self.parent[0]

        conv_h = x.size(2)
        conv_w = x.size(3)

        if cfg.extra_head_net is not None:
            x = src.upfeature(x)

        if cfg.use_prediction_module:
            # The two branches of PM design (c)
            a = src.block(x)

            b = src.conv(x)
            b = src.bn(b)
            b = F.relu(b)

            # TODO: Possibly switch this out for a product
            x = a + b

        bbox_x = src.bbox_extra(x)
        conf_x = src.conf_extra(x)
        mask_x = src.mask_extra(x)

        bbox = src.bbox_layer(bbox_x).permute(0, 2, 3, 1).contiguous().view(x.size(0), -1, 4)
        conf = src.conf_layer(conf_x).permute(0, 2, 3, 1).contiguous().view(x.size(0), -1, self.num_classes)
        mask = src.mask_layer(mask_x).permute(0, 2, 3, 1).contiguous().view(x.size(0), -1, self.mask_dim)

        # See box_utils.decode for an explanation of this
        if cfg.use_yolo_regressors:
            bbox[:, :, :2] = torch.sigmoid(bbox[:, :, :2]) - 0.5
            bbox[:, :, 0] /= conv_w
            bbox[:, :, 1] /= conv_h

        if cfg.mask_type == mask_type.direct:
            mask = torch.sigmoid(mask)
        elif cfg.mask_type == mask_type.lincomb:
            mask = cfg.mask_proto_coeff_activation(mask)

            if cfg.mask_proto_coeff_gate:
                gate = src.gate_layer(x).permute(0, 2, 3, 1).contiguous().view(x.size(0), -1, self.mask_dim)
                mask = mask * torch.sigmoid(gate)

        priors = self.make_priors(conv_h, conv_w)

        return (bbox, conf, mask, priors)

    def make_priors(self, conv_h, conv_w):
        """ Note that priors are [x,y,width,height] where (x,y) is the center of the box. """

        if self.last_conv_size != (conv_w, conv_h):
            prior_data = []

            # Iteration order is important (it has to sync up with the convout)
            for j, i in product(range(conv_h), range(conv_w)):
                # +0.5 because priors are in center-size notation
                x = (i + 0.5) / conv_w
                y = (j + 0.5) / conv_h

                for scale, ars in zip(self.scales, self.aspect_ratios):
                    for ar in ars:
                        w = scale * ar / conv_w
                        h = scale / ar / conv_h

                        prior_data += [x, y, w, h]

            self.priors = torch.Tensor(prior_data).view(-1, 4)
            self.last_conv_size = (conv_w, conv_h)

        return self.priors


class FPN(nn.Module):
    def __init__(self, in_channels):
        super().__init__()

        self.lat_layers  = nn.ModuleList([
            nn.Conv2d(x, cfg.fpn.num_features, kernel_size=1)
            for x in reversed(in_channels)
        ])
        self.pred_layers = nn.ModuleList([
            nn.Conv2d(cfg.fpn.num_features, cfg.fpn.num_features, kernel_size=3)
            for _ in in_channels
        ])

    def forward(self, convouts):
        out = [None] * len(convouts)
        x = 0

        # For backward compatability, the conv layers are stored in reverse but the input and output is
        # given in the correct order. Thus, use j=-i-1 for the input and output and i for the conv layers.
        for i in range(len(convouts)):
            j = -i-1

            if i > 0:
                _, _, h, w = convouts[j].size()
                x = F.interpolate(x, size=(h, w), mode=cfg.fpn.interpolation_mode, align_corners=False)

            x = x + self.lat_layers[i](convouts[j])
            out[j] = F.relu(self.pred_layers[i](x))

        # In the original paper, this takes care of P6
        for _ in range(cfg.fpn.num_downsample):
            out.append(out[-1][:, :, ::2, ::2]) # A stride 2 view on out[-1] along both height and width

        return out


class YolactHeads(nn.Module):
    def __init__(self, src_channels=(8, 16, 32)):
        super().__init__()
        self.selected_layers = [0, 1, 2]
        # Some hacky rewiring to accomodate the FPN
        self.fpn = FPN([src_channels[i] for i in self.selected_layers])
        self.selected_layers = list(range(len(self.selected_layers) + cfg.fpn.num_downsample))
        src_channels = [cfg.fpn.num_features] * len(self.selected_layers)

        self.prediction_layers = nn.ModuleList()

        for idx, layer_idx in enumerate(self.selected_layers):
            # If we're sharing prediction module weights, have every module's parent be the first one
            parent = None
            if cfg.share_prediction_module and idx > 0:
                parent = self.prediction_layers[0]

            pred = PredictionModule(src_channels[layer_idx], src_channels[layer_idx],
                                    aspect_ratios = cfg.pred_aspect_ratios[idx],
                                    scales        = cfg.pred_scales[idx],
                                    parent        = parent)
            self.prediction_layers.append(pred)

    def forward(self, c3, c4, c5):
        outs = self.fpn([c3, c4, c5])

        pred_outs = ([], [], [], [])

        for idx, pred_layer in zip(self.selected_layers, self.prediction_layers):
            pred_x = outs[idx]

            p = pred_layer(pred_x)

            for out, pred in zip(pred_outs, p):
                out.append(pred)

        pred_outs = [torch.cat(x, -2) for x in pred_outs]
        return pred_outs


def make():
    torch.manual_seed(0)
    feats = (torch.randn(1, 8, 20, 20), torch.randn(1, 16, 10, 10), torch.randn(1, 32, 6, 6))
    small = (torch.randn(1, 8, 16, 16), torch.randn(1, 16, 8, 8), torch.randn(1, 32, 6, 6))
    return YolactHeads().train(), [feats, small]


def train():
    net = YolactHeads()
    net.train()
    return torch.compile(net)
