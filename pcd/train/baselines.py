"""The PCD paper's specialised pruning baselines that are not registry methods: ``prox`` (the group
soft-threshold after each cross-entropy step) and ``lagrangian`` (Cooper 1.x proxy-Lagrangian with a
target group density)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from pcd.train import metrics as mt
from pcd.train.objectives import GroupLasso


@torch.no_grad()
def _prox_step(gl: GroupLasso, step: float) -> float:
    """Group soft-threshold ``w_g <- w_g * max(0, 1 - step / ||w_g||)`` (proximal operator of step*GL)."""
    norms = gl.groups.norms()
    scale = torch.where(norms > step, 1.0 - step / norms.clamp_min(1e-30), torch.zeros_like(norms))
    for p, rows, gid in gl.groups.entries:
        s = scale[gid].to(p.dtype).view(-1, *([1] * (p.dim() - 1)))
        p.index_copy_(0, rows, p.index_select(0, rows) * s)
    return float(gl.groups.norms().sum())


def _make_cooper(gl: GroupLasso, mp: dict, opt: torch.optim.Optimizer, device: torch.device):
    """Cooper 1.x proxy-Lagrangian: ``min CE  s.t.  density(w) <= target`` (density = share of groups >= 1e-4)."""
    import cooper

    with torch.no_grad():
        gl0 = float(gl.value(1e-12))
    target = float(mp["target_density"])

    class SparsityCMP(cooper.ConstrainedMinimizationProblem):
        def __init__(self) -> None:
            super().__init__()
            self.constraint = cooper.Constraint(
                constraint_type=cooper.ConstraintType.INEQUALITY,
                formulation_type=cooper.formulations.Lagrangian,
                multiplier=cooper.multipliers.DenseMultiplier(num_constraints=1, device=device),
            )

        def compute_cmp_state(self, model, x, y, autocast) -> cooper.CMPState:
            with autocast:
                loss = F.cross_entropy(model(x).float(), y)
            surrogate = gl.value(1e-12) / gl0  # differentiable on the weights only
            norms = gl.groups.norms()
            density = (norms >= mt.GROUP_ZERO).float().mean()
            state = cooper.ConstraintState(violation=(surrogate - target).reshape(1),
                                           strict_violation=(density - target).reshape(1))
            return cooper.CMPState(loss=loss, observed_constraints={self.constraint: state},
                                   misc={"group_lasso": float(surrogate.detach()) * gl0, "density": float(density)})

    cmp = SparsityCMP()
    dual = torch.optim.SGD(cmp.dual_parameters(), lr=float(mp["dual_lr"]), maximize=True)
    return cmp, cooper.optim.SimultaneousOptimizer(cmp=cmp, primal_optimizers=opt, dual_optimizers=dual)
