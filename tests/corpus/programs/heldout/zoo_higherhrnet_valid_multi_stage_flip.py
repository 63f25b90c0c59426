"""HigherHRNet test-time inference: `get_multi_stage_outputs` resizes the low-resolution stage to the last one, averages heatmaps over cfg-selected stages, re-runs the model on the flipped image and reorders joints with a Python flip-index list, projects to the image size; `aggregate_results` accumulates over scales.

Source: HRNet/HigherHRNet-Human-Pose-Estimation@aa23881492ff511185acf756a2e14725cc4ab4d7:lib/core/inference.py:75-208
Also: lib/dataset/transforms/build.py:15-28 (FLIP_CONFIG), tools/valid.py:162-180 (the
no_grad scale loop that calls both).
Kept: get_multi_stage_outputs and aggregate_results verbatim, FLIP_CONFIG verbatim, the
valid.py loop body (sorted scale factors, final_heatmaps/tags_list threading).
Simplified: resize_align_multi_scale (cv2) is skipped, the same resized image serves every
scale; PoseHigherResolutionNet is a stand-in returning its two final outputs (17 heatmaps +
17 tag maps at 1/4, 17 heatmaps at 1/2); the yacs cfg is a small attribute class; 32x32 input.
"""
import torch
import torch.nn as nn


FLIP_CONFIG = {
    'COCO': [
        0, 2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15
    ],
    'COCO_WITH_CENTER': [
        0, 2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15, 17
    ],
    'CROWDPOSE': [
        1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 12, 13
    ],
    'CROWDPOSE_WITH_CENTER': [
        1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 12, 13, 14
    ]
}


def get_multi_stage_outputs(
        cfg, model, image, with_flip=False,
        project2image=False, size_projected=None
):
    # outputs = []
    heatmaps_avg = 0
    num_heatmaps = 0
    heatmaps = []
    tags = []

    outputs = model(image)
    for i, output in enumerate(outputs):
        if len(outputs) > 1 and i != len(outputs) - 1:
            output = torch.nn.functional.interpolate(
                output,
                size=(outputs[-1].size(2), outputs[-1].size(3)),
                mode='bilinear',
                align_corners=False
            )

        offset_feat = cfg.DATASET.NUM_JOINTS \
            if cfg.LOSS.WITH_HEATMAPS_LOSS[i] else 0

        if cfg.LOSS.WITH_HEATMAPS_LOSS[i] and cfg.TEST.WITH_HEATMAPS[i]:
            heatmaps_avg += output[:, :cfg.DATASET.NUM_JOINTS]
            num_heatmaps += 1

        if cfg.LOSS.WITH_AE_LOSS[i] and cfg.TEST.WITH_AE[i]:
            tags.append(output[:, offset_feat:])

    if num_heatmaps > 0:
        heatmaps.append(heatmaps_avg/num_heatmaps)

    if with_flip:
        if 'coco' in cfg.DATASET.DATASET:
            dataset_name = 'COCO'
        elif 'crowd_pose' in cfg.DATASET.DATASET:
            dataset_name = 'CROWDPOSE'
        else:
            raise ValueError('Please implement flip_index for new dataset: %s.' % cfg.DATASET.DATASET)
        flip_index = FLIP_CONFIG[dataset_name + '_WITH_CENTER'] \
            if cfg.DATASET.WITH_CENTER else FLIP_CONFIG[dataset_name]

        heatmaps_avg = 0
        num_heatmaps = 0
        outputs_flip = model(torch.flip(image, [3]))
        for i in range(len(outputs_flip)):
            output = outputs_flip[i]
            if len(outputs_flip) > 1 and i != len(outputs_flip) - 1:
                output = torch.nn.functional.interpolate(
                    output,
                    size=(outputs_flip[-1].size(2), outputs_flip[-1].size(3)),
                    mode='bilinear',
                    align_corners=False
                )
            output = torch.flip(output, [3])
            outputs.append(output)

            offset_feat = cfg.DATASET.NUM_JOINTS \
                if cfg.LOSS.WITH_HEATMAPS_LOSS[i] else 0

            if cfg.LOSS.WITH_HEATMAPS_LOSS[i] and cfg.TEST.WITH_HEATMAPS[i]:
                heatmaps_avg += \
                    output[:, :cfg.DATASET.NUM_JOINTS][:, flip_index, :, :]
                num_heatmaps += 1

            if cfg.LOSS.WITH_AE_LOSS[i] and cfg.TEST.WITH_AE[i]:
                tags.append(output[:, offset_feat:])
                if cfg.MODEL.TAG_PER_JOINT:
                    tags[-1] = tags[-1][:, flip_index, :, :]

        heatmaps.append(heatmaps_avg/num_heatmaps)

    if cfg.DATASET.WITH_CENTER and cfg.TEST.IGNORE_CENTER:
        heatmaps = [hms[:, :-1] for hms in heatmaps]
        tags = [tms[:, :-1] for tms in tags]

    if project2image and size_projected:
        heatmaps = [
            torch.nn.functional.interpolate(
                hms,
                size=(size_projected[1], size_projected[0]),
                mode='bilinear',
                align_corners=False
            )
            for hms in heatmaps
        ]

        tags = [
            torch.nn.functional.interpolate(
                tms,
                size=(size_projected[1], size_projected[0]),
                mode='bilinear',
                align_corners=False
            )
            for tms in tags
        ]

    return outputs, heatmaps, tags


def aggregate_results(
        cfg, scale_factor, final_heatmaps, tags_list, heatmaps, tags
):
    if scale_factor == 1 or len(cfg.TEST.SCALE_FACTOR) == 1:
        if final_heatmaps is not None and not cfg.TEST.PROJECT2IMAGE:
            tags = [
                torch.nn.functional.interpolate(
                    tms,
                    size=(final_heatmaps.size(2), final_heatmaps.size(3)),
                    mode='bilinear',
                    align_corners=False
                )
                for tms in tags
            ]
        for tms in tags:
            tags_list.append(torch.unsqueeze(tms, dim=4))

    heatmaps_avg = (heatmaps[0] + heatmaps[1])/2.0 if cfg.TEST.FLIP_TEST \
        else heatmaps[0]

    if final_heatmaps is None:
        final_heatmaps = heatmaps_avg
    elif cfg.TEST.PROJECT2IMAGE:
        final_heatmaps += heatmaps_avg
    else:
        final_heatmaps += torch.nn.functional.interpolate(
            heatmaps_avg,
            size=(final_heatmaps.size(2), final_heatmaps.size(3)),
            mode='bilinear',
            align_corners=False
        )

    return final_heatmaps, tags_list


class PoseHigherResolutionNetStandIn(nn.Module):
    def __init__(self, num_joints=17):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 4, stride=4)
        self.final_layer0 = nn.Conv2d(16, 2 * num_joints, 1)
        self.deconv = nn.ConvTranspose2d(16 + 2 * num_joints, 16, 4, stride=2, padding=1)
        self.final_layer1 = nn.Conv2d(16, num_joints, 1)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        final_outputs = []
        y = self.final_layer0(x)
        final_outputs.append(y)
        x = torch.relu(self.deconv(torch.cat((x, y), 1)))
        final_outputs.append(self.final_layer1(x))
        return final_outputs


class _Dataset:
    NUM_JOINTS = 17
    DATASET = 'coco_kpt'
    WITH_CENTER = False


class _LossCfg:
    WITH_HEATMAPS_LOSS = (True, True)
    WITH_AE_LOSS = (True, False)


class _Model:
    TAG_PER_JOINT = True


class _Test:
    WITH_HEATMAPS = (True, True)
    WITH_AE = (True, False)
    IGNORE_CENTER = True
    FLIP_TEST = True
    PROJECT2IMAGE = True
    SCALE_FACTOR = [1]


class Cfg:
    DATASET = _Dataset()
    LOSS = _LossCfg()
    MODEL = _Model()
    TEST = _Test()


class _TestNoFlip(_Test):
    FLIP_TEST = False
    PROJECT2IMAGE = False


class CfgNoFlip(Cfg):
    TEST = _TestNoFlip()


def valid_step(cfg, model, image_resized, base_size):
    with torch.no_grad():
        final_heatmaps = None
        tags_list = []
        for idx, s in enumerate(sorted(cfg.TEST.SCALE_FACTOR, reverse=True)):
            outputs, heatmaps, tags = get_multi_stage_outputs(
                cfg, model, image_resized, cfg.TEST.FLIP_TEST,
                cfg.TEST.PROJECT2IMAGE, base_size
            )

            final_heatmaps, tags_list = aggregate_results(
                cfg, s, final_heatmaps, tags_list, heatmaps, tags
            )
    return final_heatmaps, tags_list


valid_step_compiled = torch.compile(valid_step)


def make():
    torch.manual_seed(0)
    model = PoseHigherResolutionNetStandIn().eval()
    image = torch.rand(1, 3, 32, 32)
    return valid_step, [(Cfg(), model, image, (40, 36)), (CfgNoFlip(), model, image, (40, 36))]
