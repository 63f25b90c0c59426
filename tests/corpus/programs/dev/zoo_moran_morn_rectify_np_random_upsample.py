"""MORAN rectification network (MORN): in training, half the batches skip rectification by a
`np.random.random() > 0.5` coin flip; otherwise a CNN predicts vertical offsets that are pooled,
grid-sampled onto a precomputed numpy meshgrid and used to resample the text image, optionally refined
`enhance` times at test time.

Source: Canjie-Luo/MORAN_v2@410596fda22a4746ef83301928de1e91e7d012f7:models/morn.py:6-142,
models/moran.py:5-21, main.py:94
Kept: MORN.__init__ (numpy meshgrid tiled to maxBatch, `torch.from_numpy(grid).type(self.inputDataType)`,
Variable, `self.cuda = CUDA`) and forward verbatim (coin flip, `assert x.data.type() == self.inputDataType`,
slicing the grids by `x.size(0)`, nn.functional.upsample, the enhance loop), built with
inputDataType='torch.FloatTensor', CUDA=False as main.py does without --cuda.
Simplified: the `debug` visualization branch (matplotlib/cv2/colour) is left out; targetH 16, targetW 32,
maxBatch 4; MORN is compiled on its own rather than inside MORAN.
"""
import torch
import torch.nn as nn
from torch.autograd import Variable
import numpy as np


class MORN(nn.Module):
    def __init__(self, nc, targetH, targetW, inputDataType='torch.cuda.FloatTensor', maxBatch=256, CUDA=True):
        super(MORN, self).__init__()
        self.targetH = targetH
        self.targetW = targetW
        self.inputDataType = inputDataType
        self.maxBatch = maxBatch
        self.cuda = CUDA

        self.cnn = nn.Sequential(
            nn.MaxPool2d(2, 2),
            nn.Conv2d(nc, 64, 3, 1, 1), nn.BatchNorm2d(64), nn.ReLU(True), nn.MaxPool2d(2, 2),
            nn.Conv2d(64, 128, 3, 1, 1), nn.BatchNorm2d(128), nn.ReLU(True), nn.MaxPool2d(2, 2),
            nn.Conv2d(128, 64, 3, 1, 1), nn.BatchNorm2d(64), nn.ReLU(True),
            nn.Conv2d(64, 16, 3, 1, 1), nn.BatchNorm2d(16), nn.ReLU(True),
            nn.Conv2d(16, 1, 3, 1, 1), nn.BatchNorm2d(1)
            )

        self.pool = nn.MaxPool2d(2, 1)

        h_list = np.arange(self.targetH)*2./(self.targetH-1)-1
        w_list = np.arange(self.targetW)*2./(self.targetW-1)-1

        grid = np.meshgrid(
                w_list,
                h_list,
                indexing='ij'
            )
        grid = np.stack(grid, axis=-1)
        grid = np.transpose(grid, (1, 0, 2))
        grid = np.expand_dims(grid, 0)
        grid = np.tile(grid, [maxBatch, 1, 1, 1])
        grid = torch.from_numpy(grid).type(self.inputDataType)
        if self.cuda:
            grid = grid.cuda()

        self.grid = Variable(grid, requires_grad=False)
        self.grid_x = self.grid[:, :, :, 0].unsqueeze(3)
        self.grid_y = self.grid[:, :, :, 1].unsqueeze(3)

    def forward(self, x, test, enhance=1, debug=False):

        if not test and np.random.random() > 0.5:
            return nn.functional.upsample(x, size=(self.targetH, self.targetW), mode='bilinear')
        if not test:
            enhance = 0

        assert x.size(0) <= self.maxBatch
        assert x.data.type() == self.inputDataType

        grid = self.grid[:x.size(0)]
        grid_x = self.grid_x[:x.size(0)]
        grid_y = self.grid_y[:x.size(0)]
        x_small = nn.functional.upsample(x, size=(self.targetH, self.targetW), mode='bilinear')

        offsets = self.cnn(x_small)
        offsets_posi = nn.functional.relu(offsets, inplace=False)
        offsets_nega = nn.functional.relu(-offsets, inplace=False)
        offsets_pool = self.pool(offsets_posi) - self.pool(offsets_nega)

        offsets_grid = nn.functional.grid_sample(offsets_pool, grid)
        offsets_grid = offsets_grid.permute(0, 2, 3, 1).contiguous()
        offsets_x = torch.cat([grid_x, grid_y + offsets_grid], 3)
        x_rectified = nn.functional.grid_sample(x, offsets_x)

        for iteration in range(enhance):
            offsets = self.cnn(x_rectified)

            offsets_posi = nn.functional.relu(offsets, inplace=False)
            offsets_nega = nn.functional.relu(-offsets, inplace=False)
            offsets_pool = self.pool(offsets_posi) - self.pool(offsets_nega)

            offsets_grid += nn.functional.grid_sample(offsets_pool, grid).permute(0, 2, 3, 1).contiguous()
            offsets_x = torch.cat([grid_x, grid_y + offsets_grid], 3)
            x_rectified = nn.functional.grid_sample(x, offsets_x)

        return x_rectified


morn = torch.compile(MORN(1, 16, 32, inputDataType='torch.FloatTensor', maxBatch=4, CUDA=False))


def make():
    torch.manual_seed(0)
    np.random.seed(0)
    m = MORN(1, 16, 32, inputDataType='torch.FloatTensor', maxBatch=4, CUDA=False)
    x = torch.rand(2, 1, 20, 48) * 2 - 1
    # the coin flip is drawn inside forward from the global numpy RNG, which the harness seeds before every
    # call, so training calls all take the same side; test calls take the rectification path
    return m, [(x, False), (x, True), (x, True, 2)]
