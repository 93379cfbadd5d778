"""The six-line training loop, exactly as it reads in PyTorch, with reftorch in its place.

Fits a small network to y = sin(x) + noise. Run: python examples/six_line_loop.py
"""
import math

import reftorch as torch
from reftorch import nn
from reftorch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x = torch.linspace(-math.pi, math.pi, 512).unsqueeze(1)
y = torch.sin(x) + 0.05 * torch.randn(512, 1)
loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 1))
loss_fn = nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

for epoch in range(40):                      # the six lines
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()

with torch.no_grad():
    final = loss_fn(model(x), torch.sin(x)).item()
print(f"mean squared error against sin(x) after training: {final:.4f}")
assert final < 0.01, "the loop did not fit sin(x)"
