"""VoteNet VotingModule: seeds vote `vote_factor` xyz offsets plus residual features (conv1d/BN, transpose/view/contiguous reshapes).

Source: facebookresearch/votenet@2f6d6d36ff98d96901182e935afe48ccee82d566:models/voting_module.py:16-73
Kept: VotingModule verbatim (in_dim == out_dim residual, the vote_xyz and
vote_features reshapes).
Simplified: seed feature dim 16 instead of 256, 12 seeds instead of 1024; the
`__main__` demo's `.cuda()` calls dropped.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class VotingModule(nn.Module):
    def __init__(self, vote_factor, seed_feature_dim):
        """ Votes generation from seed point features.

        Args:
            vote_facotr: int
                number of votes generated from each seed point
            seed_feature_dim: int
                number of channels of seed point features
            vote_feature_dim: int
                number of channels of vote features
        """
        super().__init__()
        self.vote_factor = vote_factor
        self.in_dim = seed_feature_dim
        self.out_dim = self.in_dim # due to residual feature, in_dim has to be == out_dim
        self.conv1 = torch.nn.Conv1d(self.in_dim, self.in_dim, 1)
        self.conv2 = torch.nn.Conv1d(self.in_dim, self.in_dim, 1)
        self.conv3 = torch.nn.Conv1d(self.in_dim, (3+self.out_dim) * self.vote_factor, 1)
        self.bn1 = torch.nn.BatchNorm1d(self.in_dim)
        self.bn2 = torch.nn.BatchNorm1d(self.in_dim)
        
    def forward(self, seed_xyz, seed_features):
        """ Forward pass.

        Arguments:
            seed_xyz: (batch_size, num_seed, 3) Pytorch tensor
            seed_features: (batch_size, feature_dim, num_seed) Pytorch tensor
        Returns:
            vote_xyz: (batch_size, num_seed*vote_factor, 3)
            vote_features: (batch_size, vote_feature_dim, num_seed*vote_factor)
        """
        batch_size = seed_xyz.shape[0]
        num_seed = seed_xyz.shape[1]
        num_vote = num_seed*self.vote_factor
        net = F.relu(self.bn1(self.conv1(seed_features))) 
        net = F.relu(self.bn2(self.conv2(net))) 
        net = self.conv3(net) # (batch_size, (3+out_dim)*vote_factor, num_seed)
                
        net = net.transpose(2,1).view(batch_size, num_seed, self.vote_factor, 3+self.out_dim)
        offset = net[:,:,:,0:3]
        vote_xyz = seed_xyz.unsqueeze(2) + offset
        vote_xyz = vote_xyz.contiguous().view(batch_size, num_vote, 3)
        
        residual_features = net[:,:,:,3:] # (batch_size, num_seed, vote_factor, out_dim)
        vote_features = seed_features.transpose(2,1).unsqueeze(2) + residual_features
        vote_features = vote_features.contiguous().view(batch_size, num_vote, self.out_dim)
        vote_features = vote_features.transpose(2,1).contiguous()
        
        return vote_xyz, vote_features


def build_voting(vote_factor=2, seed_feature_dim=16):
    net = VotingModule(vote_factor, seed_feature_dim)
    net.compile()
    return net


def make():
    torch.manual_seed(0)
    xyz = torch.rand(2, 12, 3)
    features = torch.rand(2, 16, 12)
    xyz1 = torch.rand(3, 20, 3)
    features1 = torch.rand(3, 16, 20)
    return VotingModule(2, 16), [(xyz, features), (xyz1, features1)]
