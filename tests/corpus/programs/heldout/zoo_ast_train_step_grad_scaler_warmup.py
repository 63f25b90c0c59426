"""AST training step (the body of traintest.train's batch loop): warm-up learning rate written into the
optimizer param groups every 50 steps up to step 1000, `with autocast():` forward + BCEWithLogitsLoss,
GradScaler scale/backward/step/update, `loss_meter.update(loss.item(), B)` and the periodic print.

Source: YuanGongND/ast@504d5842e75d46c9676a86cd83b15f0b3b4463c2:src/traintest.py:19-136 (train loop body) and
YuanGongND/ast@2e00ccbb62c7cc2e1775f5d846464132fc23ae5d:src/models/ast_models.py:17-176 (the model)
Kept: the loop body verbatim (global_step warm-up branch and its print, `loss_fn = nn.BCEWithLogitsLoss()` built
per step, autocast context, optimizer.zero_grad / scaler.scale(loss).backward() / scaler.step / scaler.update,
AverageMeter updates, print_step / early_print_step logic), the model wrapped in nn.DataParallel as train() does,
the model as in ast_models.py (see zoo_ast_audio_spectrogram_forward_autocast for its simplifications).
Simplified: the batch loop body is a function taking (audio_model, audio_input, labels, optimizer, scaler,
global_step, epoch, args) and returning the step's loss; timing meters other than loss_meter are dropped;
no data loader. Toy sizes: 40 frames x 32 bins, 35 labels, embed dim 16.
"""
import torch
import torch.nn as nn
from torch.cuda.amp import autocast, GradScaler


def to_2tuple(x):
    return (x, x) if not isinstance(x, tuple) else x


# override the timm package to relax the input shape constraint.
class PatchEmbed(nn.Module):
    def __init__(self, img_size=224, patch_size=16, in_chans=3, embed_dim=768):
        super().__init__()

        img_size = to_2tuple(img_size)
        patch_size = to_2tuple(patch_size)
        num_patches = (img_size[1] // patch_size[1]) * (img_size[0] // patch_size[0])
        self.img_size = img_size
        self.patch_size = patch_size
        self.num_patches = num_patches

        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        x = self.proj(x).flatten(2).transpose(1, 2)
        return x


# timm 0.4.5 vision_transformer pieces
class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.fc2 = nn.Linear(hidden_features, out_features)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        x = self.fc1(x)
        x = self.act(x)
        x = self.drop(x)
        x = self.fc2(x)
        x = self.drop(x)
        return x


class Attention(nn.Module):
    def __init__(self, dim, num_heads=8, qkv_bias=False, qk_scale=None, attn_drop=0., proj_drop=0.):
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = qk_scale or head_dim ** -0.5

        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]   # make torchscript happy (cannot use tensor as tuple)

        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)

        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class Block(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4., qkv_bias=True, drop=0., attn_drop=0.):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, num_heads=num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop, proj_drop=drop)
        self.drop_path = nn.Identity()
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(in_features=dim, hidden_features=int(dim * mlp_ratio), drop=drop)

    def forward(self, x):
        x = x + self.drop_path(self.attn(self.norm1(x)))
        x = x + self.drop_path(self.mlp(self.norm2(x)))
        return x


class DistilledVisionTransformer(nn.Module):
    """Stand-in for timm.create_model('vit_deit_tiny_distilled_patch16_224') at toy width."""

    def __init__(self, img_size=64, patch_size=16, embed_dim=16, depth=2, num_heads=2, drop_rate=0.1):
        super().__init__()
        self.patch_embed = PatchEmbed(img_size=img_size, patch_size=patch_size, in_chans=3, embed_dim=embed_dim)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.dist_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 2, embed_dim))
        self.pos_drop = nn.Dropout(p=drop_rate)
        self.blocks = nn.ModuleList([Block(embed_dim, num_heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim, eps=1e-6)


class ASTModel(nn.Module):
    def __init__(self, label_dim=527, fstride=10, tstride=10, input_fdim=128, input_tdim=1024, imagenet_pretrain=True, audioset_pretrain=False, model_size='base384', verbose=True):

        super(ASTModel, self).__init__()

        if verbose == True:
            print('---------------AST Model Summary---------------')
            print('ImageNet pretraining: {:s}, AudioSet pretraining: {:s}'.format(str(imagenet_pretrain),str(audioset_pretrain)))

        # if AudioSet pretraining is not used (but ImageNet pretraining may still apply)
        if audioset_pretrain == False:
            if model_size == 'tiny224':
                self.v = DistilledVisionTransformer()
            else:
                raise Exception('Model size must be one of tiny224, small224, base224, base384.')
            self.original_num_patches = self.v.patch_embed.num_patches
            self.oringal_hw = int(self.original_num_patches ** 0.5)
            self.original_embedding_dim = self.v.pos_embed.shape[2]
            self.mlp_head = nn.Sequential(nn.LayerNorm(self.original_embedding_dim), nn.Linear(self.original_embedding_dim, label_dim))

            # automatcially get the intermediate shape
            f_dim, t_dim = self.get_shape(fstride, tstride, input_fdim, input_tdim)
            num_patches = f_dim * t_dim
            self.v.patch_embed.num_patches = num_patches
            if verbose == True:
                print('frequncey stride={:d}, time stride={:d}'.format(fstride, tstride))
                print('number of patches={:d}'.format(num_patches))

            # the linear projection layer
            new_proj = torch.nn.Conv2d(1, self.original_embedding_dim, kernel_size=(16, 16), stride=(fstride, tstride))
            if imagenet_pretrain == True:
                new_proj.weight = torch.nn.Parameter(torch.sum(self.v.patch_embed.proj.weight, dim=1).unsqueeze(1))
                new_proj.bias = self.v.patch_embed.proj.bias
            self.v.patch_embed.proj = new_proj

            # if not use imagenet pretrained model, just randomly initialize a learnable positional embedding
            new_pos_embed = nn.Parameter(torch.zeros(1, self.v.patch_embed.num_patches + 2, self.original_embedding_dim))
            self.v.pos_embed = new_pos_embed
            nn.init.trunc_normal_(self.v.pos_embed, std=.02)
        else:
            raise ValueError('AudioSet-pretrained weights are not available here.')

    def get_shape(self, fstride, tstride, input_fdim=128, input_tdim=1024):
        test_input = torch.randn(1, 1, input_fdim, input_tdim)
        test_proj = nn.Conv2d(1, self.original_embedding_dim, kernel_size=(16, 16), stride=(fstride, tstride))
        test_out = test_proj(test_input)
        f_dim = test_out.shape[2]
        t_dim = test_out.shape[3]
        return f_dim, t_dim

    @autocast()
    def forward(self, x):
        """
        :param x: the input spectrogram, expected shape: (batch_size, time_frame_num, frequency_bins), e.g., (12, 1024, 128)
        :return: prediction
        """
        # expect input x = (batch_size, time_frame_num, frequency_bins), e.g., (12, 1024, 128)
        x = x.unsqueeze(1)
        x = x.transpose(2, 3)

        B = x.shape[0]
        x = self.v.patch_embed(x)
        cls_tokens = self.v.cls_token.expand(B, -1, -1)
        dist_token = self.v.dist_token.expand(B, -1, -1)
        x = torch.cat((cls_tokens, dist_token, x), dim=1)
        x = x + self.v.pos_embed
        x = self.v.pos_drop(x)
        for blk in self.v.blocks:
            x = blk(x)
        x = self.v.norm(x)
        x = (x[:, 0] + x[:, 1]) / 2

        x = self.mlp_head(x)
        return x


class AverageMeter(object):
    """Computes and stores the average and current value"""
    def __init__(self):
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


class Args:
    lr = 1e-4
    n_print_steps = 100


loss_meter = AverageMeter()


def train_step(audio_model, audio_input, labels, optimizer, scaler, global_step, epoch, args):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    B = audio_input.size(0)
    audio_input = audio_input.to(device, non_blocking=True)
    labels = labels.to(device, non_blocking=True)

    # first several steps for warm-up
    if global_step <= 1000 and global_step % 50 == 0:
        warm_lr = (global_step / 1000) * args.lr
        for param_group in optimizer.param_groups:
            param_group['lr'] = warm_lr
        print('warm-up learning rate is {:f}'.format(optimizer.param_groups[0]['lr']))

    loss_fn = nn.BCEWithLogitsLoss()
    with autocast():
        audio_output = audio_model(audio_input)
        loss = loss_fn(audio_output, labels)

    # optimiztion if amp is used
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()

    # record loss
    loss_meter.update(loss.item(), B)

    print_step = global_step % args.n_print_steps == 0
    early_print_step = epoch == 0 and global_step % (args.n_print_steps/10) == 0
    print_step = print_step or early_print_step

    if print_step and global_step != 0:
        print('Epoch: [{0}][{1}]\t'
              'Train Loss {loss_meter.avg:.4f}\t'.format(
               epoch, global_step, loss_meter=loss_meter), flush=True)
    return loss


compiled_train_step = torch.compile(train_step)


def make():
    torch.manual_seed(0)
    audio_model = ASTModel(label_dim=35, input_fdim=32, input_tdim=40, imagenet_pretrain=False,
                           model_size='tiny224', verbose=False)
    audio_model = nn.DataParallel(audio_model)
    audio_model.train()
    trainables = [p for p in audio_model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(trainables, 1e-4, weight_decay=5e-7, betas=(0.95, 0.999))
    scaler = GradScaler()
    args = Args()
    x = torch.rand([2, 40, 32])
    y = (torch.rand([2, 35]) > 0.9).float()
    # step 50: warm-up branch, no print; step 1100: print branch, past warm-up
    return train_step, [
        (audio_model, x, y, optimizer, scaler, 50, 1, args),
        (audio_model, x, y, optimizer, scaler, 1100, 1, args),
    ]
