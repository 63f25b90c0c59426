"""U^2-Net training loss: `muti_bce_loss_fusion` sums BCE over the fused map and six side outputs and prints every term with `loss.data.item()`.

Source: xuebinqin/U-2-Net@ac7e1c817ecab7c7dff5ce6b1abba61cd213ff29:u2net_train.py:27-44
Also: u2net_train.py:121-155 (the training step that calls it and reads `loss.data.item()`).
Kept: the module-level `bce_loss = nn.BCELoss(size_average=True)` and muti_bce_loss_fusion
verbatim (tab indentation, the print format); the Variable(..., requires_grad=False) wrap
of the labels from the CPU branch of the training loop.
Simplified: the seven U2NET outputs are random sigmoid maps of 2x1x16x16.
"""
import torch
import torch.nn as nn
from torch.autograd import Variable

# ------- 1. define loss function --------

bce_loss = nn.BCELoss(size_average=True)

def muti_bce_loss_fusion(d0, d1, d2, d3, d4, d5, d6, labels_v):

	loss0 = bce_loss(d0,labels_v)
	loss1 = bce_loss(d1,labels_v)
	loss2 = bce_loss(d2,labels_v)
	loss3 = bce_loss(d3,labels_v)
	loss4 = bce_loss(d4,labels_v)
	loss5 = bce_loss(d5,labels_v)
	loss6 = bce_loss(d6,labels_v)

	loss = loss0 + loss1 + loss2 + loss3 + loss4 + loss5 + loss6
	print("l0: %3f, l1: %3f, l2: %3f, l3: %3f, l4: %3f, l5: %3f, l6: %3f\n"%(loss0.data.item(),loss1.data.item(),loss2.data.item(),loss3.data.item(),loss4.data.item(),loss5.data.item(),loss6.data.item()))

	return loss0, loss


loss_fn = torch.compile(muti_bce_loss_fusion)


def make():
	torch.manual_seed(0)
	ds = [torch.sigmoid(torch.randn(2, 1, 16, 16)) for _ in range(7)]
	labels = (torch.rand(2, 1, 16, 16) > 0.5).type(torch.FloatTensor)
	labels_v = Variable(labels, requires_grad=False)
	return muti_bce_loss_fusion, [(*ds, labels_v)]
