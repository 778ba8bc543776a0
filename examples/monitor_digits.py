"""A plain two-loss PyTorch loop -- cross-entropy + group lasso on sklearn's digits -- with its
training geometry recorded by ``pcd.monitor`` (the lines marked ``# +``). Then:

    python -m pcd monitor summary digits_geometry.jsonl
"""
import sys

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits

from pcd.monitor import Recorder  # +

torch.manual_seed(0)
X, y = load_digits(return_X_y=True)
X, y = torch.tensor(X / 16.0, dtype=torch.float32), torch.tensor(y)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
lam = 0.05  # group lasso weight: one group per input pixel (a column of the first layer)


def group_lasso(m):
    return m[0].weight.norm(dim=0).sum()


path = sys.argv[1] if len(sys.argv) > 1 else "digits_geometry.jsonl"
rec = Recorder(path, model.parameters(), every=10, objectives=["cross-entropy", "group lasso"],  # +
               hparams={"ws": {"w": lam, "normalize": False}})  # + the loop's own weights for "WS"
for _ in range(3000):  # full-batch gradient descent on the weighted sum ce + lam * gl
    ce, gl = F.cross_entropy(model(X), y), group_lasso(model)
    rec.step([ce, gl])  # +  (reads the two gradients; the update below is unchanged)
    opt.zero_grad()
    (ce + lam * gl).backward()
    opt.step()
rec.close()  # +
print("accuracy", (model(X).argmax(1) == y).float().mean().item(),
      "zero groups", int((model[0].weight.norm(dim=0) < 1e-3).sum()))
