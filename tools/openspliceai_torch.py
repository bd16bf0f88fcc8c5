"""OpenSpliceAI in PyTorch, for bench/splice.R: the network of the fixtures'
README (models/openspliceai/README.md, "The network, as needed for
inference") built from torch.nn layers, the released state dict loaded into
it with torch.load, and run as the upstream command-line tool runs it: each
sequence upper-cased, one-hot (A, C, G, T; other letters zero), padded with
flank / 2 zero columns on both sides and cut into blocks of 5,000 outputs
(5,000 + flank columns each, the last one zero-filled), the blocks of all
sequences evaluated as one batch, outputs concatenated and cut to each
sequence's length. Written from that specification (OpenSpliceAI's own code
is not installed here); its layers and their order are upstream's, so that
the arithmetic is PyTorch's Conv1d, BatchNorm1d and LeakyReLU kernels.

Usage: python3 openspliceai_torch.py MODEL.pt SEQS.txt THREADS REPS OUT.f32
  SEQS.txt: one sequence per line. Writes every sequence's probabilities
  (length x 3, float32, row-major, sequences in order) to OUT.f32 and prints
  one JSON line: seconds (best of REPS forward passes, after one warm-up),
  positions, threads, torch version.
"""
import json
import sys
import time

import torch
from torch import nn

BLOCK = 5000
GROUPS = {80: [(11, 1)], 400: [(11, 1), (11, 4)], 2000: [(11, 1), (11, 4), (21, 10)],
          10000: [(11, 1), (11, 4), (21, 10), (41, 25)]}


class Unit(nn.Module):
    def __init__(self, k, d):
        super().__init__()
        self.batchnorm1 = nn.BatchNorm1d(32)
        self.conv1 = nn.Conv1d(32, 32, k, dilation=d, padding=d * (k - 1) // 2)
        self.batchnorm2 = nn.BatchNorm1d(32)
        self.conv2 = nn.Conv1d(32, 32, k, dilation=d, padding=d * (k - 1) // 2)
        self.act = nn.LeakyReLU(0.1)

    def forward(self, x):
        h = self.conv1(self.act(self.batchnorm1(x)))
        return x + self.conv2(self.act(self.batchnorm2(h)))


class Skip(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(32, 32, 1)

    def forward(self, x):
        return self.conv(x)


class OpenSpliceAI(nn.Module):
    """residual_units.{5 g + u} (u < 4) are the units of group g,
    residual_units.{5 g + 4}.conv its skip projection (the state dict's
    names)."""

    def __init__(self, flank):
        super().__init__()
        self.flank = flank
        self.initial_conv = nn.Conv1d(4, 32, 1)
        self.initial_skip = Skip()
        units = []
        for k, d in GROUPS[flank]:
            units += [Unit(k, d) for _ in range(4)] + [Skip()]
        self.residual_units = nn.ModuleList(units)
        self.final_conv = nn.Conv1d(32, 3, 1)

    def forward(self, x):
        x = self.initial_conv(x)
        skip = self.initial_skip(x)
        for i, m in enumerate(self.residual_units):
            if i % 5 == 4:
                skip = skip + m(x)
            else:
                x = m(x)
        h = self.flank // 2
        return torch.softmax(self.final_conv(skip[:, :, h:skip.shape[2] - h]), dim=1)


def one_hot(s):
    idx = {"A": 0, "C": 1, "G": 2, "T": 3}
    x = torch.zeros(4, len(s))
    for j, c in enumerate(s.upper()):
        if c in idx:
            x[idx[c], j] = 1.0
    return x


def blocks(s, flank):
    """The padded sequence cut into ceil(L / 5000) blocks of 5000 + flank columns."""
    x = one_hot(s)
    n = max(1, -(-len(s) // BLOCK))
    padded = torch.zeros(4, n * BLOCK + flank)
    padded[:, flank // 2:flank // 2 + len(s)] = x
    return [padded[:, i * BLOCK:i * BLOCK + BLOCK + flank] for i in range(n)]


def main():
    model_path, seqs_path, threads, reps, out_path = sys.argv[1:6]
    torch.set_num_threads(int(threads))
    state = torch.load(model_path, map_location="cpu")
    flank = None  # from the number of residual units in the state dict
    for f, groups in GROUPS.items():
        if sum(1 for key in state if key.endswith(".conv1.weight")) == 4 * len(groups):
            flank = f
    model = OpenSpliceAI(flank)
    model.load_state_dict(state)
    model.eval()
    seqs = [line.strip() for line in open(seqs_path) if line.strip()]
    per_seq = [blocks(s, flank) for s in seqs]
    batch = torch.stack([b for bl in per_seq for b in bl])
    best = None
    with torch.no_grad():
        for r in range(int(reps) + 1):
            t0 = time.perf_counter()
            y = model(batch)  # [blocks, 3, 5000]
            dt = time.perf_counter() - t0
            if r > 0:
                best = dt if best is None else min(best, dt)
    out, k = [], 0
    for s, bl in zip(seqs, per_seq):
        p = torch.cat([y[k + i] for i in range(len(bl))], dim=1)[:, :len(s)]
        k += len(bl)
        out.append(p.t().contiguous())
    torch.cat(out).numpy().astype("float32").tofile(out_path)
    print(json.dumps({"seconds": best, "positions": sum(len(s) for s in seqs), "threads": int(threads),
                      "blocks": int(batch.shape[0]), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
