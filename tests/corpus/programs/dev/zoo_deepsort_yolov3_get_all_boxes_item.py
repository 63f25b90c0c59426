"""deep_sort_pytorch YOLOv3 detector: a cfg-driven `Darknet.forward` (block dicts, string layer specs parsed each call) whose yolo blocks return `get_mask_boxes` dicts built with `torch.FloatTensor(list)`/`torch.IntTensor`, then `get_all_boxes` reads `output[i]['n'].item()` and decodes the region boxes.

Source: ZQPei/deep_sort_pytorch@4f910afc16860ff05c6be408b120a49524bd4f68:detector/YOLOv3/yolo_utils.py:161-254
Also: detector/YOLOv3/darknet.py:18-33,113-158 (Upsample, Darknet.forward),
detector/YOLOv3/yolo_layer.py:9-37 (YoloLayer.__init__, get_mask_boxes),
detector/YOLOv3/detector.py:41-46 (the no_grad net + get_all_boxes call).
Kept: Darknet.forward, Upsample, YoloLayer.get_mask_boxes, get_all_boxes and
get_region_boxes verbatim (the `.data` reads, torch.LongTensor(range(0, 2)), the
assert on output.size(1)); the detector's no_grad block as the compiled function.
Simplified: create_network from a cfg file is replaced by a hand-built block list
(net, 2 convolutional, shortcut, yolo, route, upsample, convolutional, yolo) with
conv+BN+leaky modules; 2 classes, 3 anchors per yolo layer, 16x16 input.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Upsample(nn.Module):
    def __init__(self, stride=2):
        super(Upsample, self).__init__()
        self.stride = stride

    def forward(self, x):
        stride = self.stride
        assert (x.data.dim() == 4)
        B = x.data.size(0)
        C = x.data.size(1)
        H = x.data.size(2)
        W = x.data.size(3)
        ws = stride
        hs = stride
        x = x.view(B, C, H, 1, W, 1).expand(B, C, H, hs, W, ws).contiguous().view(B, C, H * hs, W * ws)
        return x


class YoloLayer(nn.Module):
    def __init__(self, anchor_mask=[], num_classes=0, anchors=[], num_anchors=1, use_cuda=None):
        super(YoloLayer, self).__init__()
        use_cuda = torch.cuda.is_available() and (True if use_cuda is None else use_cuda)
        self.device = torch.device("cuda" if use_cuda else "cpu")

        self.anchor_mask = anchor_mask
        self.num_classes = num_classes
        self.anchors = anchors
        self.num_anchors = num_anchors
        self.anchor_step = len(anchors) // num_anchors
        self.rescore = 0
        self.ignore_thresh = 0.5
        self.truth_thresh = 1.
        self.stride = 32
        self.nth_layer = 0
        self.seen = 0
        self.net_width = 0
        self.net_height = 0

    def get_mask_boxes(self, output):
        masked_anchors = []
        for m in self.anchor_mask:
            masked_anchors += self.anchors[m * self.anchor_step:(m + 1) * self.anchor_step]
        masked_anchors = [anchor / self.stride for anchor in masked_anchors]

        masked_anchors = torch.FloatTensor(masked_anchors).to(self.device)
        num_anchors = torch.IntTensor([len(self.anchor_mask)]).to(self.device)
        return {'x': output, 'a': masked_anchors, 'n': num_anchors}


def conv_block(c_in, c_out, k):
    return nn.Sequential(nn.Conv2d(c_in, c_out, k, 1, k // 2, bias=False),
                         nn.BatchNorm2d(c_out), nn.LeakyReLU(0.1, inplace=True))


ANCHORS = [10, 13, 16, 30, 33, 23, 30, 61, 62, 45, 59, 119]


def yolo_layer(mask, stride, num_classes):
    layer = YoloLayer(use_cuda=False)
    layer.anchor_mask = mask
    layer.anchors = [float(i) for i in ANCHORS]
    layer.num_classes = num_classes
    layer.num_anchors = 6
    layer.anchor_step = len(layer.anchors) // layer.num_anchors
    layer.stride = stride
    return layer


class Darknet(nn.Module):
    def __init__(self, num_classes=2):
        super(Darknet, self).__init__()
        no = 3 * (5 + num_classes)
        self.blocks = [
            {'type': 'net', 'width': '16', 'height': '16'},
            {'type': 'convolutional'},
            {'type': 'convolutional'},
            {'type': 'shortcut', 'from': '-2', 'activation': 'linear'},
            {'type': 'convolutional'},
            {'type': 'yolo'},
            {'type': 'route', 'layers': '-3'},
            {'type': 'upsample'},
            {'type': 'convolutional'},
            {'type': 'yolo'},
        ]
        self.models = nn.ModuleList([
            conv_block(3, 8, 3),
            conv_block(8, 8, 3),
            nn.Identity(),
            nn.Conv2d(8, no, 1),
            yolo_layer([3, 4, 5], 2, num_classes),
            nn.Identity(),
            Upsample(2),
            nn.Conv2d(8, no, 1),
            yolo_layer([0, 1, 2], 1, num_classes),
        ])
        self.num_classes = num_classes
        self.width = 16
        self.height = 16

    def forward(self, x):
        ind = -2
        self.loss_layers = None
        outputs = dict()
        out_boxes = dict()
        outno = 0
        for block in self.blocks:
            ind = ind + 1

            if block['type'] == 'net':
                continue
            elif block['type'] in ['convolutional', 'maxpool', 'reorg', 'upsample', 'avgpool', 'softmax', 'connected']:
                x = self.models[ind](x)
                outputs[ind] = x
            elif block['type'] == 'route':
                layers = block['layers'].split(',')
                layers = [int(i) if int(i) > 0 else int(i) + ind for i in layers]
                if len(layers) == 1:
                    x = outputs[layers[0]]
                elif len(layers) == 2:
                    x1 = outputs[layers[0]]
                    x2 = outputs[layers[1]]
                    x = torch.cat((x1, x2), 1)
                outputs[ind] = x
            elif block['type'] == 'shortcut':
                from_layer = int(block['from'])
                activation = block['activation']
                from_layer = from_layer if from_layer > 0 else from_layer + ind
                x1 = outputs[from_layer]
                x2 = outputs[ind - 1]
                x = x1 + x2
                if activation == 'leaky':
                    x = F.leaky_relu(x, 0.1, inplace=True)
                elif activation == 'relu':
                    x = F.relu(x, inplace=True)
                outputs[ind] = x
            elif block['type'] in ['region', 'yolo']:
                boxes = self.models[ind].get_mask_boxes(x)
                out_boxes[outno] = boxes
                outno += 1
                outputs[ind] = None
            elif block['type'] == 'cost':
                continue
            else:
                print('unknown type %s' % (block['type']))
        return x if outno == 0 else out_boxes


def get_all_boxes(output, conf_thresh, num_classes, only_objectness=1, validation=False, use_cuda=True):
    # total number of inputs (batch size)
    # first element (x) for first tuple (x, anchor_mask, num_anchor)
    batchsize = output[0]['x'].data.size(0)

    all_boxes = []
    for i in range(len(output)):
        pred, anchors, num_anchors = output[i]['x'].data, output[i]['a'], output[i]['n'].item()
        boxes = get_region_boxes(pred, conf_thresh, num_classes, anchors, num_anchors, \
                                 only_objectness=only_objectness, validation=validation, use_cuda=use_cuda)

        all_boxes.append(boxes)
    return torch.cat(all_boxes, dim=1)


def get_region_boxes(output, obj_thresh, num_classes, anchors, num_anchors, only_objectness=1, validation=False,
                     use_cuda=True):
    device = torch.device("cuda" if use_cuda else "cpu")
    anchors = anchors.to(device)
    anchor_step = anchors.size(0) // num_anchors
    if output.dim() == 3:
        output = output.unsqueeze(0)
    batch = output.size(0)
    assert (output.size(1) == (5 + num_classes) * num_anchors)
    h = output.size(2)
    w = output.size(3)
    cls_anchor_dim = batch * num_anchors * h * w

    # all_boxes = []
    output = output.view(batch * num_anchors, 5 + num_classes, h * w).transpose(0, 1).contiguous().view(5 + num_classes,
                                                                                                        cls_anchor_dim)

    grid_x = torch.linspace(0, w - 1, w).repeat(batch * num_anchors, h, 1).view(cls_anchor_dim).to(device)
    grid_y = torch.linspace(0, h - 1, h).repeat(w, 1).t().repeat(batch * num_anchors, 1, 1).view(cls_anchor_dim).to(
        device)
    ix = torch.LongTensor(range(0, 2)).to(device)
    anchor_w = anchors.view(num_anchors, anchor_step).index_select(1, ix[0]).repeat(1, batch, h * w).view(
        cls_anchor_dim)
    anchor_h = anchors.view(num_anchors, anchor_step).index_select(1, ix[1]).repeat(1, batch, h * w).view(
        cls_anchor_dim)

    xs, ys = torch.sigmoid(output[0]) + grid_x, torch.sigmoid(output[1]) + grid_y
    ws, hs = torch.exp(output[2]) * anchor_w.detach(), torch.exp(output[3]) * anchor_h.detach()
    det_confs = torch.sigmoid(output[4])

    # by ysyun, dim=1 means input is 2D or even dimension else dim=0
    cls_confs = torch.nn.Softmax(dim=1)(output[5:5 + num_classes].transpose(0, 1)).detach()
    cls_max_confs, cls_max_ids = torch.max(cls_confs, 1)
    cls_max_confs = cls_max_confs.view(-1)
    cls_max_ids = cls_max_ids.view(-1).float()

    cls_confs = det_confs * cls_max_confs

    # boxes = [xs/w, ys/h, ws/w, hs/h, det_confs, cls_confs, cls_max_ids]
    xs, ys, ws, hs = xs / w, ys / h, ws / w, hs / h
    x1, y1, x2, y2 = torch.clamp_min(xs - ws / 2., 0.), torch.clamp_min(ys - hs / 2., 0.), torch.clamp_max(xs + ws / 2.,
                                                                                                           1.), torch.clamp_max(
        ys + hs / 2., 1.)
    boxes = [x1, y1, x2, y2, det_confs, cls_confs, cls_max_ids]
    boxes = list(map(lambda x: x.view(batch, -1), boxes))
    boxes = torch.stack(boxes, dim=2)
    return boxes


def detect(net, img, conf_thresh=0.01, use_cuda=False):
    with torch.no_grad():
        out_boxes = net(img)
        boxes = get_all_boxes(out_boxes, conf_thresh, net.num_classes,
                              use_cuda=use_cuda)  # batch size is 1
    return boxes


detect_compiled = torch.compile(detect)


def make():
    torch.manual_seed(0)
    net = Darknet(num_classes=2).eval()
    img = torch.rand(1, 3, 16, 16)
    return detect, [(net, img), (net, img, 0.5)]
