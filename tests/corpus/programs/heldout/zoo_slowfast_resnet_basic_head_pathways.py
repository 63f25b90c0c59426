"""SlowFast ResNetBasicHead: per pathway an avg-pool found with `getattr(self, "pathway{}_avgpool")`, `hasattr(self, "dropout")`, a Linear applied channels-last, and fully convolutional inference under `if not self.training` (softmax + mean over T, H, W).

Source: facebookresearch/SlowFast@0cc82440fee6e51a5807853b583be238bf26a253:slowfast/models/head_helper.py:130-226
Kept: ResNetBasicHead.__init__/forward verbatim (both pathways, act_func
"softmax", dropout 0.5).
Simplified: the backbone is replaced by the two pathway tensors passed in
(slow: 16 channels x 2 frames, fast: 4 channels x 8 frames, 4x4); the head is
compiled in eval mode as test_net runs it.
"""
import torch
import torch.nn as nn


class ResNetBasicHead(nn.Module):
    def __init__(
        self,
        dim_in,
        num_classes,
        pool_size,
        dropout_rate=0.0,
        act_func="softmax",
    ):
        super(ResNetBasicHead, self).__init__()
        assert (
            len({len(pool_size), len(dim_in)}) == 1
        ), "pathway dimensions are not consistent."
        self.num_pathways = len(pool_size)

        for pathway in range(self.num_pathways):
            if pool_size[pathway] is None:
                avg_pool = nn.AdaptiveAvgPool3d((1, 1, 1))
            else:
                avg_pool = nn.AvgPool3d(pool_size[pathway], stride=1)
            self.add_module("pathway{}_avgpool".format(pathway), avg_pool)

        if dropout_rate > 0.0:
            self.dropout = nn.Dropout(dropout_rate)
        # Perform FC in a fully convolutional manner. The FC layer will be
        # initialized with a different std comparing to convolutional layers.
        self.projection = nn.Linear(sum(dim_in), num_classes, bias=True)

        # Softmax for evaluation and testing.
        if act_func == "softmax":
            self.act = nn.Softmax(dim=4)
        elif act_func == "sigmoid":
            self.act = nn.Sigmoid()
        else:
            raise NotImplementedError(
                "{} is not supported as an activation"
                "function.".format(act_func)
            )

    def forward(self, inputs):
        assert (
            len(inputs) == self.num_pathways
        ), "Input tensor does not contain {} pathway".format(self.num_pathways)
        pool_out = []
        for pathway in range(self.num_pathways):
            m = getattr(self, "pathway{}_avgpool".format(pathway))
            pool_out.append(m(inputs[pathway]))
        x = torch.cat(pool_out, 1)
        # (N, C, T, H, W) -> (N, T, H, W, C).
        x = x.permute((0, 2, 3, 4, 1))
        # Perform dropout.
        if hasattr(self, "dropout"):
            x = self.dropout(x)
        x = self.projection(x)

        # Performs fully convlutional inference.
        if not self.training:
            x = self.act(x)
            x = x.mean([1, 2, 3])

        x = x.view(x.shape[0], -1)
        return x


def build_head():
    return ResNetBasicHead(dim_in=[16, 4], num_classes=5,
                           pool_size=[[2, 2, 2], [8, 2, 2]], dropout_rate=0.5)


head = torch.compile(build_head().eval())


def make():
    torch.manual_seed(0)
    slow = torch.randn(2, 16, 2, 4, 4)
    fast = torch.randn(2, 4, 8, 4, 4)
    return build_head().eval(), [([slow, fast],)]
