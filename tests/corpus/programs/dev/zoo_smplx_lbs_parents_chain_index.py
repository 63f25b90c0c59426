"""SMPL forward through smplx's `lbs`: pose2rot flag, `max(betas.shape[0], ...)` batch logic, and batch_rigid_transform indexing a Python list with `parents[i]` taken from a buffer tensor.

Source: vchoutas/smplx@01ccae79e189d8eb2f15f160d3b5619e3d4a1a53:smplx/lbs.py:186-404 (lbs, vertices2joints, blend_shapes, batch_rodrigues, transform_mat, batch_rigid_transform); smplx/body_models.py SMPL.forward
Kept: lbs and its helpers as written (einsum blend shapes, the pose2rot
branch, the transform chain loop `transform_chain[parents[i]]` over a
`parents` buffer), SMPL.forward's defaults from registered parameters,
`int(batch_size / betas.shape[0])` expansion, the optional transl, and a
dataclass output.
Simplified: 10 vertices, 4 joints, 4 betas; no vertex_joint_selector /
joint_mapper; parameters are made with a fixed seed instead of loaded;
`rel_joints.view(-1, 3, 1)` is `.reshape` (einsum's output strides in
current torch make the view raise).
"""
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


def lbs(betas, pose, v_template, shapedirs, posedirs, J_regressor, parents,
        lbs_weights, pose2rot=True, dtype=torch.float32):
    batch_size = max(betas.shape[0], pose.shape[0])
    device = betas.device

    # Add shape contribution
    v_shaped = v_template + blend_shapes(betas, shapedirs)

    # Get the joints
    # NxJx3 array
    J = vertices2joints(J_regressor, v_shaped)

    # 3. Add pose blend shapes
    # N x J x 3 x 3
    ident = torch.eye(3, dtype=dtype, device=device)
    if pose2rot:
        rot_mats = batch_rodrigues(
            pose.view(-1, 3), dtype=dtype).view([batch_size, -1, 3, 3])

        pose_feature = (rot_mats[:, 1:, :, :] - ident).view([batch_size, -1])
        # (N x P) x (P, V * 3) -> N x V x 3
        pose_offsets = torch.matmul(pose_feature, posedirs) \
            .view(batch_size, -1, 3)
    else:
        pose_feature = pose[:, 1:].view(batch_size, -1, 3, 3) - ident
        rot_mats = pose.view(batch_size, -1, 3, 3)

        pose_offsets = torch.matmul(pose_feature.view(batch_size, -1),
                                    posedirs).view(batch_size, -1, 3)

    v_posed = pose_offsets + v_shaped
    # 4. Get the global joint location
    J_transformed, A = batch_rigid_transform(rot_mats, J, parents, dtype=dtype)

    # 5. Do skinning:
    # W is N x V x (J + 1)
    W = lbs_weights.unsqueeze(dim=0).expand([batch_size, -1, -1])
    # (N x V x (J + 1)) x (N x (J + 1) x 16)
    num_joints = J_regressor.shape[0]
    T = torch.matmul(W, A.view(batch_size, num_joints, 16)) \
        .view(batch_size, -1, 4, 4)

    homogen_coord = torch.ones([batch_size, v_posed.shape[1], 1],
                               dtype=dtype, device=device)
    v_posed_homo = torch.cat([v_posed, homogen_coord], dim=2)
    v_homo = torch.matmul(T, torch.unsqueeze(v_posed_homo, dim=-1))

    verts = v_homo[:, :, :3, 0]

    return verts, J_transformed


def vertices2joints(J_regressor, vertices):
    return torch.einsum('bik,ji->bjk', [vertices, J_regressor])


def blend_shapes(betas, shape_disps):
    blend_shape = torch.einsum('bl,mkl->bmk', [betas, shape_disps])
    return blend_shape


def batch_rodrigues(rot_vecs, epsilon=1e-8, dtype=torch.float32):
    batch_size = rot_vecs.shape[0]
    device = rot_vecs.device

    angle = torch.norm(rot_vecs + 1e-8, dim=1, keepdim=True)
    rot_dir = rot_vecs / angle

    cos = torch.unsqueeze(torch.cos(angle), dim=1)
    sin = torch.unsqueeze(torch.sin(angle), dim=1)

    # Bx1 arrays
    rx, ry, rz = torch.split(rot_dir, 1, dim=1)
    K = torch.zeros((batch_size, 3, 3), dtype=dtype, device=device)

    zeros = torch.zeros((batch_size, 1), dtype=dtype, device=device)
    K = torch.cat([zeros, -rz, ry, rz, zeros, -rx, -ry, rx, zeros], dim=1) \
        .view((batch_size, 3, 3))

    ident = torch.eye(3, dtype=dtype, device=device).unsqueeze(dim=0)
    rot_mat = ident + sin * K + (1 - cos) * torch.bmm(K, K)
    return rot_mat


def transform_mat(R, t):
    # No padding left or right, only add an extra row
    return torch.cat([F.pad(R, [0, 0, 0, 1]),
                      F.pad(t, [0, 0, 0, 1], value=1)], dim=2)


def batch_rigid_transform(rot_mats, joints, parents, dtype=torch.float32):
    joints = torch.unsqueeze(joints, dim=-1)

    rel_joints = joints.clone()
    rel_joints[:, 1:] -= joints[:, parents[1:]]

    transforms_mat = transform_mat(
        rot_mats.view(-1, 3, 3),
        rel_joints.reshape(-1, 3, 1)).view(-1, joints.shape[1], 4, 4)

    transform_chain = [transforms_mat[:, 0]]
    for i in range(1, parents.shape[0]):
        # Subtract the joint location at the rest pose
        # No need for rotation, since it's identity when at rest
        curr_res = torch.matmul(transform_chain[parents[i]],
                                transforms_mat[:, i])
        transform_chain.append(curr_res)

    transforms = torch.stack(transform_chain, dim=1)

    # The last column of the transformations contains the posed joints
    posed_joints = transforms[:, :, :3, 3]

    joints_homogen = F.pad(joints, [0, 0, 0, 1])

    rel_transforms = transforms - F.pad(
        torch.matmul(transforms, joints_homogen), [3, 0, 0, 0, 0, 0, 0, 0])

    return posed_joints, rel_transforms


@dataclass
class SMPLOutput:
    vertices: Optional[torch.Tensor] = None
    joints: Optional[torch.Tensor] = None
    betas: Optional[torch.Tensor] = None
    body_pose: Optional[torch.Tensor] = None
    global_orient: Optional[torch.Tensor] = None
    full_pose: Optional[torch.Tensor] = None


class SMPL(nn.Module):
    NUM_JOINTS = 3
    SHAPE_SPACE_DIM = 4

    def __init__(self, num_verts=10, num_betas=4, dtype=torch.float32):
        super().__init__()
        self.dtype = dtype
        num_joints = self.NUM_JOINTS + 1
        self.betas = nn.Parameter(torch.zeros([1, num_betas], dtype=dtype))
        self.global_orient = nn.Parameter(torch.zeros([1, 3], dtype=dtype))
        self.body_pose = nn.Parameter(torch.zeros([1, self.NUM_JOINTS * 3], dtype=dtype))
        self.register_buffer('v_template', torch.randn(num_verts, 3, dtype=dtype))
        self.register_buffer('shapedirs', torch.randn(num_verts, 3, num_betas, dtype=dtype) * 0.01)
        self.register_buffer('J_regressor', torch.softmax(torch.randn(num_joints, num_verts), dim=1))
        num_pose_basis = self.NUM_JOINTS * 9
        self.register_buffer('posedirs', torch.randn(num_pose_basis, num_verts * 3, dtype=dtype) * 0.01)
        parents = torch.tensor([-1, 0, 1, 1], dtype=torch.long)
        self.register_buffer('parents', parents)
        self.register_buffer('lbs_weights', torch.softmax(torch.randn(num_verts, num_joints), dim=1))

    def forward(
        self,
        betas: Optional[torch.Tensor] = None,
        body_pose: Optional[torch.Tensor] = None,
        global_orient: Optional[torch.Tensor] = None,
        transl: Optional[torch.Tensor] = None,
        return_verts=True,
        return_full_pose: bool = False,
        pose2rot: bool = True,
        **kwargs
    ) -> SMPLOutput:
        # If no shape and pose parameters are passed along, then use the
        # ones from the module
        global_orient = (global_orient if global_orient is not None else
                         self.global_orient)
        body_pose = body_pose if body_pose is not None else self.body_pose
        betas = betas if betas is not None else self.betas

        apply_trans = transl is not None or hasattr(self, 'transl')
        if transl is None and hasattr(self, 'transl'):
            transl = self.transl

        full_pose = torch.cat([global_orient, body_pose], dim=1)

        batch_size = max(betas.shape[0], global_orient.shape[0],
                         body_pose.shape[0])

        if betas.shape[0] != batch_size:
            num_repeats = int(batch_size / betas.shape[0])
            betas = betas.expand(num_repeats, -1)

        vertices, joints = lbs(betas, full_pose, self.v_template,
                               self.shapedirs, self.posedirs,
                               self.J_regressor, self.parents,
                               self.lbs_weights, pose2rot=pose2rot)

        if apply_trans:
            joints += transl.unsqueeze(dim=1)
            vertices += transl.unsqueeze(dim=1)

        output = SMPLOutput(vertices=vertices if return_verts else None,
                            global_orient=global_orient,
                            body_pose=body_pose,
                            joints=joints,
                            betas=betas,
                            full_pose=full_pose if return_full_pose else None)

        return output


def build_body_model():
    torch.manual_seed(0)
    return SMPL()


body_model = build_body_model()
body_model.compile()


def make():
    torch.manual_seed(0)
    model = build_body_model()
    body_pose = torch.randn(2, 9) * 0.3
    global_orient = torch.randn(2, 3) * 0.3
    betas = torch.randn(1, 4)
    transl = torch.randn(2, 3)
    rot = torch.eye(3).expand(2, 4, 3, 3).contiguous()
    return model, [
        (betas, body_pose, global_orient),
        (betas.expand(2, -1), body_pose, global_orient, transl, True, True),
        (None, rot[:, 1:], rot[:, :1], None, True, False, False),
    ]
