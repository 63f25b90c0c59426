"""VGGT CameraHead: iterative pose refinement (new trunk) with adaLN modulation, `pred_pose_enc is None` first step, activate_pose per iteration.

Source: facebookresearch/vggt@06347a1e57916b1a20f517b56a158eec4486d0d4:vggt/heads/camera_head.py:21-215
Kept: modulate, CameraHead (__init__'s pose_encoding_type / proj_dim /
trunk_depth / new_trunk plumbing, forward's trunk_depth / new_trunk
dispatch, new_trunk_fn verbatim with the detach, chunk(3) modulation,
update_new_trunk_tokens flag and the per-iteration activate_pose);
activate_pose / base_pose_act / inverse_log_transform from
vggt/heads/head_act.py (stored at ab9d1d2a2cb4f5d38ebf6a436961646b826491f7).
Simplified: vggt.layers Block and Mlp are small local pre-norm stand-ins;
old_trunk_fn (needs PoseEmbedding) is dropped; dim 32, 2 heads, trunk
depth 2, 2 frames of 5 tokens each.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def activate_pose(pred_pose_enc, trans_act="linear", quat_act="linear", fl_act="linear"):
    T = pred_pose_enc[..., :3]
    quat = pred_pose_enc[..., 3:7]
    fl = pred_pose_enc[..., 7:]  # or fov

    T = base_pose_act(T, trans_act)
    quat = base_pose_act(quat, quat_act)
    fl = base_pose_act(fl, fl_act)  # or fov

    pred_pose_enc = torch.cat([T, quat, fl], dim=-1)

    return pred_pose_enc


def base_pose_act(pose_enc, act_type="linear"):
    if act_type == "linear":
        return pose_enc
    elif act_type == "inv_log":
        return inverse_log_transform(pose_enc)
    elif act_type == "exp":
        return torch.exp(pose_enc)
    elif act_type == "relu":
        return F.relu(pose_enc)
    else:
        raise ValueError(f"Unknown act_type: {act_type}")


def inverse_log_transform(y):
    return torch.sign(y) * (torch.expm1(torch.abs(y)))


class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.0, bias=True):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features, bias=bias)
        self.act = act_layer()
        self.fc2 = nn.Linear(hidden_features, out_features, bias=bias)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        x = self.fc1(x)
        x = self.act(x)
        x = self.drop(x)
        x = self.fc2(x)
        x = self.drop(x)
        return x


class Block(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4.0, qk_norm=False, init_values=None):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, num_heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))

    def forward(self, x):
        y = self.norm1(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


def modulate(x, shift, scale):
    # modified from https://github.com/facebookresearch/DiT/blob/796c29e532f47bba17c5b9c5eb39b9354b8b7c64/models.py#L19
    return x * (1 + scale) + shift


class CameraHead(nn.Module):
    def __init__(
        self,
        dim_in=2048,
        patch_size=14,
        qk_norm=False,
        trunk_depth=4,
        new_trunk=True,
        update_new_trunk_tokens=False,
        pose_encoding_type="absT_quaR_FoV",
        proj_dim=-1,
        num_heads=16,
        mlp_ratio=4,
        init_values=None,
        act_dict=None,
        **kwargs,
    ):
        super().__init__()

        self.new_trunk = new_trunk
        if pose_encoding_type=="absT_quaR_FoV":
            self.target_dim = 9
        elif pose_encoding_type=="absT_quaR_OneFLM1":
            self.target_dim = 8
        else:
            raise ValueError(f"Unsupported pose encoding type: {pose_encoding_type}")

        self.update_new_trunk_tokens = update_new_trunk_tokens
        self.act_dict = act_dict
        self.trunk_depth = trunk_depth

        self.token_norm = nn.LayerNorm(dim_in)

        if proj_dim > 0:
            self.proj = nn.Linear(dim_in, proj_dim)
            dim_in = proj_dim
        else:
            self.proj = nn.Identity()

        if self.trunk_depth <0:
            self.pose_branch = nn.Linear(dim_in, self.target_dim)
        else:
            self.trunk = nn.Sequential(
                *[
                    Block(
                        dim=dim_in,
                        num_heads=num_heads,
                        mlp_ratio=mlp_ratio,
                        qk_norm=qk_norm,
                        init_values=init_values,
                    )
                    for _ in range(trunk_depth)
                ]
            )
            self.trunk_norm = nn.LayerNorm(dim_in)

            if self.new_trunk:
                # TODO: self.empty_pose_tokens -> BxSxC
                self.empty_pose_tokens = nn.Parameter(torch.zeros(1, 1, self.target_dim))
                self.embed_pose = nn.Linear(self.target_dim, dim_in)

                self.poseLN_modulation = nn.Sequential(
                    nn.SiLU(),
                    nn.Linear(dim_in, 3 * dim_in, bias=True)
                )

                self.adaln_norm = nn.LayerNorm(dim_in, elementwise_affine=False, eps=1e-6)
                self.pose_branch = Mlp(
                    in_features=dim_in,
                    hidden_features=dim_in // 2,
                    out_features=self.target_dim,
                    drop=0,
                )
            else:
                raise NotImplementedError("old trunk needs PoseEmbedding")

    def forward(self, aggregated_tokens_list, batch, patch_start_idx, iters=4,):
        tokens = aggregated_tokens_list[-1]
        # only use the Pose token for camera prediction
        pose_tokens = tokens[:, :, 0]
        pose_tokens = self.token_norm(pose_tokens)
        pose_tokens = self.proj(pose_tokens)

        B, S, C = pose_tokens.shape

        if self.trunk_depth < 0:
            pred_pose_enc = self.pose_branch(pose_tokens)
            pred_pose_enc_list = [activate_pose(pred_pose_enc, **self.act_dict)]
        elif self.new_trunk:
            pred_pose_enc_list = self.new_trunk_fn(pose_tokens, iters)
        else:
            pred_pose_enc_list = self.old_trunk_fn(pose_tokens, iters)

        # TODO add act here
        return pred_pose_enc_list

    def new_trunk_fn(self, pose_tokens, iters):
        B, S, C = pose_tokens.shape

        pred_pose_enc = None
        pose_tokens_init = pose_tokens.clone()

        pred_pose_enc_list = []

        for iter_num in range(iters):
            if pred_pose_enc is None:
                # model_input = self.empty_representation BxSxC
                module_input = self.embed_pose(self.empty_pose_tokens.expand(B, S, -1))
            else:
                pred_pose_enc = pred_pose_enc.detach()
                module_input = self.embed_pose(pred_pose_enc)

            shift_msa, scale_msa, gate_msa = self.poseLN_modulation(module_input).chunk(3, dim=-1)
            pose_tokens_modulated = gate_msa * modulate(self.adaln_norm(pose_tokens), shift_msa, scale_msa)
            pose_tokens_modulated = pose_tokens_modulated + pose_tokens

            pose_tokens_modulated = self.trunk(pose_tokens_modulated)
            pred_pose_enc_delta = self.pose_branch(self.trunk_norm(pose_tokens_modulated))

            if pred_pose_enc is None:
                pred_pose_enc = pred_pose_enc_delta
            else:
                pred_pose_enc = pred_pose_enc + pred_pose_enc_delta

            if self.update_new_trunk_tokens:
                pose_tokens = pose_tokens_modulated + pose_tokens_init

            pred_pose_enc_list.append(activate_pose(pred_pose_enc, **self.act_dict))

        return pred_pose_enc_list


ACT_DICT = {"trans_act": "linear", "quat_act": "linear", "fl_act": "relu"}


def build_camera_head():
    return CameraHead(dim_in=32, trunk_depth=2, num_heads=2, update_new_trunk_tokens=True,
                      act_dict=ACT_DICT)


camera_head = torch.compile(build_camera_head())


def make():
    torch.manual_seed(0)
    tokens = torch.randn(1, 2, 5, 32)
    return build_camera_head(), [([tokens, tokens], None, 1)]
