"""How far the trace taken on an accelerator is from the numpy reference kernel.

For PyTorch LSTM / GRU / RNN modules on the model's own device (CUDA when there is one):
unidirectional and bidirectional, one and three stacked layers (the middle one traced),
``proj_size``, and packed sequences. Prints, per case, the largest absolute difference of
every trace component (the device path, ``trace_on="device"`` where the model is on an
accelerator) from the numpy reference kernel run on a CPU copy of the model
(``recompute=True``), of the outputs from the model's own, and of the framework's own ``h``
on the accelerator from its ``h`` on the CPU (the floor: what the device's arithmetic alone
changes).

    python bench/device_exactness.py [--tf32]

``--tf32`` allows TensorFloat-32 in matmuls and cuDNN (PyTorch's default for cuDNN):
the figure a team gets when its process enables it.
"""

from __future__ import annotations

import argparse
import copy

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tf32", action="store_true")
    args = parser.parse_args()
    import torch
    from torch import nn

    from pytest_rnncov import RNNModel

    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"PyTorch {torch.__version__} on {device}, tf32={args.tf32}")

    class Net(nn.Module):
        def __init__(self, kind, **options) -> None:
            super().__init__()
            self.rnn = kind(6, 16, batch_first=True, **options)
            width = 16 * (2 if options.get("bidirectional") else 1)
            self.head = nn.Linear(options.get("proj_size") or width, 3)

        def forward(self, x):
            out, _ = self.rnn(x)
            return self.head(out[:, -1])

    class Packed(nn.Module):
        def __init__(self, kind) -> None:
            super().__init__()
            self.rnn = kind(6, 16, num_layers=2, batch_first=True)
            self.head = nn.Linear(16, 3)

        def forward(self, x):
            lengths = (x.abs().sum(-1) > 0).sum(1).clamp(min=1).cpu()
            packed = nn.utils.rnn.pack_padded_sequence(
                x, lengths, batch_first=True, enforce_sorted=False
            )
            out, _ = self.rnn(packed)
            out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
            return self.head(out[:, 0])

    rng = np.random.default_rng(0)
    x = rng.normal(size=(512, 20, 6)).astype(np.float32)
    padded = x.copy()
    for i, n in enumerate(rng.integers(1, 21, size=len(x))):
        padded[i, n:] = 0
    cases = []
    for kind in (nn.LSTM, nn.GRU, nn.RNN):
        for options, layer in [
            ({}, "rnn"),
            ({"num_layers": 3}, "rnn.l1"),
            ({"bidirectional": True, "num_layers": 2}, "rnn.l1"),
        ]:
            cases.append((f"{kind.__name__} {options or ''}", Net(kind, **options), layer, x))
        cases.append((f"{kind.__name__} packed", Packed(kind), "rnn.l1", padded))
    cases.append(("LSTM proj_size=8", Net(nn.LSTM, proj_size=8), "rnn", x))
    worst = 0.0
    for title, model, layer, inputs in cases:
        torch.manual_seed(0)
        for p in model.parameters():
            nn.init.normal_(p, 0, 0.4)
        model.eval()
        cpu = copy.deepcopy(model)
        model.to(device)
        fast = RNNModel(model, layer)
        slow = RNNModel(cpu, layer, recompute=True, trace_on="numpy")
        outputs, trace = fast.run(inputs)
        trace = trace.to_host()
        reference = slow.trace(inputs)
        # the framework itself on the CPU against the accelerator: the floor of any figure
        cpu_h = RNNModel(cpu, layer, trace_on="numpy").trace(inputs).h
        with torch.no_grad():
            own = model(torch.from_numpy(inputs).to(device)).cpu().numpy()
        diffs = {"outputs": float(np.abs(outputs - own).max())}
        for name in reference.names:
            got, want = trace.components[name], reference.components[name]
            if reference.mask is not None:
                got, want = got[reference.mask], want[reference.mask]
            diffs[name] = float(np.abs(got - want).max())
        own_h = trace.h if reference.mask is None else trace.h[reference.mask]
        cpu_h = cpu_h if reference.mask is None else cpu_h[reference.mask]
        diffs["h CPU/GPU framework"] = float(np.abs(own_h - cpu_h).max())
        worst = max(worst, *(v for k, v in diffs.items() if k in reference.names))
        shown = ", ".join(f"{k} {v:.1e}" for k, v in diffs.items())
        print(f"  {title:<45} trace on {fast.trace_on}: {shown}")
    print(f"WORST component difference from the reference: {worst:.2e}")


if __name__ == "__main__":
    main()
