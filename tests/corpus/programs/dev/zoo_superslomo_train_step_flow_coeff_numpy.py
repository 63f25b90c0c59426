"""Super SloMo training step: two UNets estimate bidirectional flow and refine intermediate flows;
the time coefficients come from `indices.detach().numpy()` fancy-indexing a module-level numpy array,
frames are back-warped with grid_sample, and the loss mixes L1, perceptual, warping and smoothness.

Source: avinashpaliwal/Super-SloMo@544802b543e4aaaa707ebac6ae6c61e1da72a6f6:model.py:10-361,
train.py:44-57,97-114,224-284
Kept: down/up/UNet/backWarp (np.meshgrid grids as tensors) and getFlowCoeff/getWarpCoeff verbatim
(`torch.Tensor(C00)[None, None, None, :].permute(3, 0, 1, 2).to(device)`), the body of the training loop
from `frame0, frameT, frame1 = trainData` to the total loss, module-level flowComp/ArbTimeFlowIntrp/
trainFlowBackWarp/vgg16_conv_4_3 as globals of the step.
Simplified: UNet channel widths divided by 8 (4..64 instead of 32..512); a 3-conv frozen stack stands in
for the pretrained VGG16 conv4_3; 32x32 frames, batch 2; the step is a function returning the loss
(backward/optimizer stay outside), compiled with torch.compile.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class down(nn.Module):
    def __init__(self, inChannels, outChannels, filterSize):
        super(down, self).__init__()
        # Initialize convolutional layers.
        self.conv1 = nn.Conv2d(inChannels,  outChannels, filterSize, stride=1, padding=int((filterSize - 1) / 2))
        self.conv2 = nn.Conv2d(outChannels, outChannels, filterSize, stride=1, padding=int((filterSize - 1) / 2))

    def forward(self, x):
        # Average pooling with kernel size 2 (2 x 2).
        x = F.avg_pool2d(x, 2)
        # Convolution + Leaky ReLU
        x = F.leaky_relu(self.conv1(x), negative_slope = 0.1)
        # Convolution + Leaky ReLU
        x = F.leaky_relu(self.conv2(x), negative_slope = 0.1)
        return x


class up(nn.Module):
    def __init__(self, inChannels, outChannels):
        super(up, self).__init__()
        # Initialize convolutional layers.
        self.conv1 = nn.Conv2d(inChannels,  outChannels, 3, stride=1, padding=1)
        # (2 * outChannels) is used for accommodating skip connection.
        self.conv2 = nn.Conv2d(2 * outChannels, outChannels, 3, stride=1, padding=1)

    def forward(self, x, skpCn):
        # Bilinear interpolation with scaling 2.
        x = F.interpolate(x, scale_factor=2, mode='bilinear')
        # Convolution + Leaky ReLU
        x = F.leaky_relu(self.conv1(x), negative_slope = 0.1)
        # Convolution + Leaky ReLU on (`x`, `skpCn`)
        x = F.leaky_relu(self.conv2(torch.cat((x, skpCn), 1)), negative_slope = 0.1)
        return x


class UNet(nn.Module):
    def __init__(self, inChannels, outChannels):
        super(UNet, self).__init__()
        # Initialize neural network blocks.
        self.conv1 = nn.Conv2d(inChannels, 4, 7, stride=1, padding=3)
        self.conv2 = nn.Conv2d(4, 4, 7, stride=1, padding=3)
        self.down1 = down(4, 8, 5)
        self.down2 = down(8, 16, 3)
        self.down3 = down(16, 32, 3)
        self.down4 = down(32, 64, 3)
        self.down5 = down(64, 64, 3)
        self.up1   = up(64, 64)
        self.up2   = up(64, 32)
        self.up3   = up(32, 16)
        self.up4   = up(16, 8)
        self.up5   = up(8, 4)
        self.conv3 = nn.Conv2d(4, outChannels, 3, stride=1, padding=1)

    def forward(self, x):
        x  = F.leaky_relu(self.conv1(x), negative_slope = 0.1)
        s1 = F.leaky_relu(self.conv2(x), negative_slope = 0.1)
        s2 = self.down1(s1)
        s3 = self.down2(s2)
        s4 = self.down3(s3)
        s5 = self.down4(s4)
        x  = self.down5(s5)
        x  = self.up1(x, s5)
        x  = self.up2(x, s4)
        x  = self.up3(x, s3)
        x  = self.up4(x, s2)
        x  = self.up5(x, s1)
        x  = F.leaky_relu(self.conv3(x), negative_slope = 0.1)
        return x


class backWarp(nn.Module):
    def __init__(self, W, H, device):
        super(backWarp, self).__init__()
        # create a grid
        gridX, gridY = np.meshgrid(np.arange(W), np.arange(H))
        self.W = W
        self.H = H
        self.gridX = torch.tensor(gridX, requires_grad=False, device=device)
        self.gridY = torch.tensor(gridY, requires_grad=False, device=device)

    def forward(self, img, flow):
        # Extract horizontal and vertical flows.
        u = flow[:, 0, :, :]
        v = flow[:, 1, :, :]
        x = self.gridX.unsqueeze(0).expand_as(u).float() + u
        y = self.gridY.unsqueeze(0).expand_as(v).float() + v
        # range -1 to 1
        x = 2*(x/self.W - 0.5)
        y = 2*(y/self.H - 0.5)
        # stacking X and Y
        grid = torch.stack((x,y), dim=3)
        # Sample pixels using bilinear interpolation.
        imgOut = torch.nn.functional.grid_sample(img, grid)
        return imgOut


# Creating an array of `t` values for the 7 intermediate frames between
# reference frames I0 and I1.
t = np.linspace(0.125, 0.875, 7)

def getFlowCoeff (indices, device):
    # Convert indices tensor to numpy array
    ind = indices.detach().numpy()
    C11 = C00 = - (1 - (t[ind])) * (t[ind])
    C01 = (t[ind]) * (t[ind])
    C10 = (1 - (t[ind])) * (1 - (t[ind]))
    return torch.Tensor(C00)[None, None, None, :].permute(3, 0, 1, 2).to(device), torch.Tensor(C01)[None, None, None, :].permute(3, 0, 1, 2).to(device), torch.Tensor(C10)[None, None, None, :].permute(3, 0, 1, 2).to(device), torch.Tensor(C11)[None, None, None, :].permute(3, 0, 1, 2).to(device)

def getWarpCoeff (indices, device):
    # Convert indices tensor to numpy array
    ind = indices.detach().numpy()
    C0 = 1 - t[ind]
    C1 = t[ind]
    return torch.Tensor(C0)[None, None, None, :].permute(3, 0, 1, 2).to(device), torch.Tensor(C1)[None, None, None, :].permute(3, 0, 1, 2).to(device)


# ---- train.py globals ----
device = torch.device("cpu")
torch.manual_seed(0)
flowComp = UNet(6, 4)
flowComp.to(device)
ArbTimeFlowIntrp = UNet(20, 5)
ArbTimeFlowIntrp.to(device)
trainFlowBackWarp      = backWarp(32, 32, device)
trainFlowBackWarp      = trainFlowBackWarp.to(device)

L1_lossFn = nn.L1Loss()
MSE_LossFn = nn.MSELoss()

# stand-in for nn.Sequential(*list(torchvision.models.vgg16(pretrained=True).children())[0][:22])
vgg16_conv_4_3 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(inplace=True),
                               nn.MaxPool2d(2, 2), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(inplace=True))
vgg16_conv_4_3.to(device)
for param in vgg16_conv_4_3.parameters():
        param.requires_grad = False


@torch.compile
def train_step(trainData, trainFrameIndex):
    ## Getting the input and the target from the training set
    frame0, frameT, frame1 = trainData

    I0 = frame0.to(device)
    I1 = frame1.to(device)
    IFrame = frameT.to(device)

    # Calculate flow between reference frames I0 and I1
    flowOut = flowComp(torch.cat((I0, I1), dim=1))

    # Extracting flows between I0 and I1 - F_0_1 and F_1_0
    F_0_1 = flowOut[:,:2,:,:]
    F_1_0 = flowOut[:,2:,:,:]

    fCoeff = getFlowCoeff(trainFrameIndex, device)

    # Calculate intermediate flows
    F_t_0 = fCoeff[0] * F_0_1 + fCoeff[1] * F_1_0
    F_t_1 = fCoeff[2] * F_0_1 + fCoeff[3] * F_1_0

    # Get intermediate frames from the intermediate flows
    g_I0_F_t_0 = trainFlowBackWarp(I0, F_t_0)
    g_I1_F_t_1 = trainFlowBackWarp(I1, F_t_1)

    # Calculate optical flow residuals and visibility maps
    intrpOut = ArbTimeFlowIntrp(torch.cat((I0, I1, F_0_1, F_1_0, F_t_1, F_t_0, g_I1_F_t_1, g_I0_F_t_0), dim=1))

    # Extract optical flow residuals and visibility maps
    F_t_0_f = intrpOut[:, :2, :, :] + F_t_0
    F_t_1_f = intrpOut[:, 2:4, :, :] + F_t_1
    V_t_0   = F.sigmoid(intrpOut[:, 4:5, :, :])
    V_t_1   = 1 - V_t_0

    # Get intermediate frames from the intermediate flows
    g_I0_F_t_0_f = trainFlowBackWarp(I0, F_t_0_f)
    g_I1_F_t_1_f = trainFlowBackWarp(I1, F_t_1_f)

    wCoeff = getWarpCoeff(trainFrameIndex, device)

    # Calculate final intermediate frame
    Ft_p = (wCoeff[0] * V_t_0 * g_I0_F_t_0_f + wCoeff[1] * V_t_1 * g_I1_F_t_1_f) / (wCoeff[0] * V_t_0 + wCoeff[1] * V_t_1)

    # Loss
    recnLoss = L1_lossFn(Ft_p, IFrame)

    prcpLoss = MSE_LossFn(vgg16_conv_4_3(Ft_p), vgg16_conv_4_3(IFrame))

    warpLoss = L1_lossFn(g_I0_F_t_0, IFrame) + L1_lossFn(g_I1_F_t_1, IFrame) + L1_lossFn(trainFlowBackWarp(I0, F_1_0), I1) + L1_lossFn(trainFlowBackWarp(I1, F_0_1), I0)

    loss_smooth_1_0 = torch.mean(torch.abs(F_1_0[:, :, :, :-1] - F_1_0[:, :, :, 1:])) + torch.mean(torch.abs(F_1_0[:, :, :-1, :] - F_1_0[:, :, 1:, :]))
    loss_smooth_0_1 = torch.mean(torch.abs(F_0_1[:, :, :, :-1] - F_0_1[:, :, :, 1:])) + torch.mean(torch.abs(F_0_1[:, :, :-1, :] - F_0_1[:, :, 1:, :]))
    loss_smooth = loss_smooth_1_0 + loss_smooth_0_1

    # Total Loss - Coefficients 204 and 102 are used instead of 0.8 and 0.4
    # since the loss in paper is calculated for input pixels in range 0-255
    # and the input to our network is in range 0-1
    loss = 204 * recnLoss + 102 * warpLoss + 0.005 * prcpLoss + loss_smooth
    return loss


def make():
    torch.manual_seed(0)
    frames = [torch.rand(2, 3, 32, 32) - 0.4 for _ in range(3)]
    return train_step._torchdynamo_orig_callable, [
        (frames, torch.tensor([3, 0])),
        (frames, torch.tensor([6, 2])),
    ]
