"""PIPS point-tracker training losses: coordinate sequence loss over the per-iteration predictions, balanced CE on visibility, and the score-map loss that keeps only heatmaps with in-bounds visible targets (`fcp_[ind]`) and writes ones by advanced indexing.

Source: aharley/pips@a05a120bd3896eeb1ab28346c00e78543ff83df5:nets/pips.py:14-91,600-606
Also: utils/basic.py:6,59-76 (EPS, reduce_masked_mean verbatim).
Kept: balanced_ce_loss, sequence_loss, score_map_loss verbatim (shape asserts in
Python loops, `.round().long()`, boolean-mask selection, `gt_[:,:,xy_[:,1],xy_[:,0]] = 1`),
and the `if trajs_g is not None:` loss block of Pips.forward as `compute_losses`,
the function the user compiles.
Simplified: `utils.basic.reduce_masked_mean` is called as a local function; the
Pips network is not run: its outputs (coord_predictions, vis_e, fcps) are given.
B=1, S=4, N=3, I=2 iterations, 8x8 stride-8 grid.
"""
import torch
import torch.nn.functional as F

EPS = 1e-6


def reduce_masked_mean(x, mask, dim=None, keepdim=False):
    # x and mask are the same shape, or at least broadcastably so < actually it's safer if you disallow broadcasting
    # returns shape-1
    # axis can be a list of axes
    for (a,b) in zip(x.size(), mask.size()):
        # if not b==1: 
        assert(a==b) # some shape mismatch!
    # assert(x.size() == mask.size())
    prod = x*mask
    if dim is None:
        numer = torch.sum(prod)
        denom = EPS+torch.sum(mask)
    else:
        numer = torch.sum(prod, dim=dim, keepdim=keepdim)
        denom = EPS+torch.sum(mask, dim=dim, keepdim=keepdim)
        
    mean = numer/denom
    return mean


def balanced_ce_loss(pred, gt, valid=None):
    # pred and gt are the same shape
    for (a,b) in zip(pred.size(), gt.size()):
        assert(a==b) # some shape mismatch!
    if valid is not None:
        for (a,b) in zip(pred.size(), valid.size()):
            assert(a==b) # some shape mismatch!
    else:
        valid = torch.ones_like(gt)
        
    pos = (gt > 0.95).float()
    neg = (gt < 0.05).float()

    label = pos*2.0 - 1.0
    a = -label * pred
    b = F.relu(a)
    loss = b + torch.log(torch.exp(-b)+torch.exp(a-b))
    
    pos_loss = reduce_masked_mean(loss, pos*valid)
    neg_loss = reduce_masked_mean(loss, neg*valid)

    balanced_loss = pos_loss + neg_loss

    return balanced_loss, loss

def sequence_loss(flow_preds, flow_gt, vis, valids, gamma=0.8):
    """ Loss function defined over sequence of flow predictions """
    B, S, N, D = flow_gt.shape
    assert(D==2)
    B, S1, N = vis.shape
    B, S2, N = valids.shape
    assert(S==S1)
    assert(S==S2)
    n_predictions = len(flow_preds)    
    flow_loss = 0.0
    for i in range(n_predictions):
        i_weight = gamma**(n_predictions - i - 1)
        flow_pred = flow_preds[i]#[:,:,0:1]
        i_loss = (flow_pred - flow_gt).abs() # B, S, N, 2
        i_loss = torch.mean(i_loss, dim=3) # B, S, N
        flow_loss += i_weight * reduce_masked_mean(i_loss, valids)
    flow_loss = flow_loss/n_predictions
    return flow_loss

def score_map_loss(fcps, trajs_g, vis_g, valids):
    #     # fcps is B,S,I,N,H8,W8
    B, S, I, N, H8, W8 = fcps.shape
    fcp_ = fcps.permute(0,1,3,2,4,5).reshape(B*S*N,I,H8,W8) # BSN,I,H8,W8
    # print('fcp_', fcp_.shape)
    xy_ = trajs_g.reshape(B*S*N,2).round().long() # BSN,2
    vis_ = vis_g.reshape(B*S*N) # BSN
    valid_ = valids.reshape(B*S*N) # BSN
    x_, y_ = xy_[:,0], xy_[:,1] # BSN
    ind = (x_ >= 0) & (x_ <= (W8-1)) & (y_ >= 0) & (y_ <= (H8-1)) & (valid_ > 0) & (vis_ > 0) # BSN
    fcp_ = fcp_[ind] # N_,I,H8,W8
    xy_ = xy_[ind] # N_,2
    N_ = fcp_.shape[0]
    # N_ is the number of heatmaps with valid targets

    # make gt with ones at the rounded spatial inds in here
    gt_ = torch.zeros_like(fcp_) # N_,I,H8,W8
    for n in range(N_):
        gt_[n,:,xy_[n,1],xy_[n,0]] = 1 # put a 1 in the right spot, for each el in I

    ## softmax
    # fcp_ = fcp_.reshape(N_*I,H8*W8)
    # gt_ = gt_.reshape(N_*I,H8*W8)
    # argm = torch.argmax(gt_, dim=1)
    # ce_loss = F.cross_entropy(fcp_, argm, reduction='mean')

    ## ce
    fcp_ = fcp_.reshape(N_*I*H8*W8)
    gt_ = gt_.reshape(N_*I*H8*W8)
    # ce_loss = F.binary_cross_entropy_with_logits(fcp_, gt_, reduction='mean')
    ce_loss, _ = balanced_ce_loss(fcp_, gt_)
    # print('ce_loss', ce_loss)
    return ce_loss




def compute_losses(coord_predictions, vis_e, fcps, trajs_g, vis_g, valids, stride=8):
    if trajs_g is not None:
        seq_loss = sequence_loss(coord_predictions, trajs_g, vis_g, valids, 0.8)
        vis_loss, _ = balanced_ce_loss(vis_e, vis_g, valids)
        ce_loss = score_map_loss(fcps, trajs_g/float(stride), vis_g, valids)
        losses = (seq_loss, vis_loss, ce_loss)
    else:
        losses = None
    return losses


compiled_losses = torch.compile(compute_losses)


def make():
    torch.manual_seed(0)
    B, S, N, I, H8, W8 = 1, 4, 3, 2, 8, 8
    trajs_g = torch.rand(B, S, N, 2) * 80.0 - 8.0
    coord_predictions = [trajs_g + torch.randn(B, S, N, 2) for _ in range(I)]
    vis_g = (torch.rand(B, S, N) > 0.3).float()
    valids = torch.ones(B, S, N)
    vis_e = torch.randn(B, S, N)
    fcps = torch.randn(B, S, I, N, H8, W8)
    return compute_losses, [
        (coord_predictions, vis_e, fcps, trajs_g, vis_g, valids),
        (coord_predictions, vis_e, fcps, None, vis_g, valids),
    ]
