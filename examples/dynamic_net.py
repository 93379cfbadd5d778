"""A network whose depth changes on every call: define-by-run autograd handles a new graph each time.

The middle layer is applied a random number of times (0 to 3) per forward pass, reusing its
weights, so gradients for it accumulate over however many times it ran. This is PyTorch's classic
"dynamic net" example, with reftorch. Run: python examples/dynamic_net.py
"""
import math
import random

import reftorch as torch
from reftorch import nn


class DynamicNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.input = nn.Linear(1, 32)
        self.middle = nn.Linear(32, 32)
        self.output = nn.Linear(32, 1)

    def forward(self, x):
        h = torch.tanh(self.input(x))
        depth = random.randint(0, 3)            # a different graph on every call
        for _ in range(depth):
            h = torch.tanh(self.middle(h))      # the same weights, reused `depth` times
        return self.output(h), depth


random.seed(0)
torch.manual_seed(0)
x = torch.linspace(-math.pi, math.pi, 256).unsqueeze(1)
y = torch.sin(x)
model = DynamicNet()
optimizer = torch.optim.Adam(model.parameters(), lr=0.005)
loss_fn = nn.MSELoss()

depths = []
for step in range(400):
    prediction, depth = model(x)
    loss = loss_fn(prediction, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    depths.append(depth)
    if step % 100 == 99:
        print(f"step {step + 1}: loss {loss.item():.4f} (depth of this call: {depth})")

print("depth histogram over the run:", {d: depths.count(d) for d in range(4)})
with torch.no_grad():
    losses = {}
    for _ in range(40):                          # evaluate each depth the model can take
        prediction, depth = model(x)
        losses[depth] = loss_fn(prediction, y).item()
print("loss at each depth:", {d: round(v, 4) for d, v in sorted(losses.items())})
assert max(losses.values()) < 0.05, "the dynamic network did not learn sin(x) at every depth"
