#!/usr/bin/env python3
"""Reference forward of the ESM-2 protein language model, in plain torch (float64).

An independent oracle for the R tests: it reads (random) weights from a GGUF
file and runs ESM-2 the way the `ESM2` class of facebookresearch/esm does at
inference time. Written from the architecture as described in
  Lin et al., "Evolutionary-scale prediction of atomic-level protein structure
  with a language model", Science 379 (2023), and the esm repository's model
  description (esm/model/esm2.py, esm/modules.py, esm/rotary_embedding.py,
  esm/multihead_attention.py);
no code was copied.

Usage:  python3 tools/esm2_torch.py MODEL.gguf TOKENS.txt OUTDIR [padded]

Inputs
  MODEL.gguf  GGUF v3, architecture "esm2", F32 tensors only (names below).
  TOKENS.txt  one sequence per line: space-separated token ids, each line
              already starting with <cls> (0) and ending with <eos> (2).
              Lines are right-padded with <pad> (1) into one batch [B, T] and
              run in ONE batched forward, so padding is exercised.
Outputs (OUTDIR must exist; b = 1..B; numpy.savetxt, fmt %.9e; each trimmed to
the sequence's own length L_b, or with "padded", of the batch's length T for
every sequence, padding included):
  s{b}_logits.txt     [L_b, 33]   LM-head logits
  s{b}_repr{l}.txt    [L_b, n_embd], l = 0..n_layer, as ESM2 repr_layers:
                      0 = embedding after token-dropout scaling and pad zeroing,
                      l = output of layer l, n_layer = after emb_layer_norm_after
  s{b}_attn.txt       [n_layer*n_head*L_b, L_b] attention maps (need_head_weights),
                      times the pairwise non-pad mask; C order (layer, head,
                      query row); columns are keys
  s{b}_contacts.txt   [L_b-2, L_b-2]  ContactPredictionHead probabilities

Model (pre-LN transformer): x = embed(tokens); token dropout at inference
(zero <mask>=32 rows, scale by (1-0.15*0.8)/(1-observed mask ratio)); zero pad
rows; per layer x += out_proj(MHA(LN(x))) with q,k,v biased linears, q scaled
by head_dim^-0.5, rotary embedding (rotate_half convention, full head dim),
pad keys -> -inf; x += fc2(gelu(fc1(LN(x)))) with erf gelu; final LN
emb_layer_norm_after; LM head dense -> gelu -> LN -> @ token_embd^T + bias.

Contact head, batched behaviour: like ESM, the head runs on the whole padded
batch: attentions (already zeroed on pad rows/cols) are multiplied by the
pairwise non-<eos> mask, the LAST column/row of the padded T is dropped (for a
shorter sequence that is a pad position, not its <eos>; its <eos> row/col is
only zeroed and stays inside), then the first (<cls>) row/col; then
[layers*heads] channels in layer-major order, symmetrize x + x^T, APC
x - rowsum*colsum/total, channels last, Linear(layers*heads, 1), sigmoid.
Since the zeroed <eos>/pad rows and columns add nothing to the APC sums, the
top-left [L_b-2, L_b-2] block written here equals what the same head gives for
the sequence alone (its residues only); positions outside that block (eos/pad)
would be sigmoid(bias) and are not written.
"""
import os
import struct
import sys

import numpy as np
import torch

PAD, CLS, EOS, MASK = 1, 0, 2, 32

# ---------------------------------------------------------------- GGUF reader
_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f",
           7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def read_gguf(path):
    """Return (metadata dict, {name: float64 numpy array in torch shape})."""
    with open(path, "rb") as f:
        buf = f.read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, buf, pos)[0]
        pos += struct.calcsize(fmt)
        return v

    def string():
        nonlocal pos
        n = take("<Q")
        s = buf[pos:pos + n].decode("utf-8")
        pos += n
        return s

    def value(t):
        if t in _SCALAR:
            return take(_SCALAR[t])
        if t == 8:
            return string()
        if t == 9:
            et, n = take("<I"), take("<Q")
            return [value(et) for _ in range(n)]
        raise ValueError(f"GGUF: unknown metadata value type {t}")

    if buf[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    pos = 4
    version, n_tensors, n_kv = take("<I"), take("<Q"), take("<Q")
    if version < 2:
        raise ValueError(f"GGUF version {version} not supported")
    meta = {}
    for _ in range(n_kv):
        key = string()
        meta[key] = value(take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = string()
        ne = [take("<Q") for _ in range(take("<I"))]
        gtype, offset = take("<I"), take("<Q")
        if gtype != 0:
            raise ValueError(f"tensor {name}: ggml type {gtype} unsupported (only F32)")
        infos.append((name, ne, offset))
    align = int(meta.get("general.alignment", 32))
    data = (pos + align - 1) // align * align
    tensors = {}
    for name, ne, offset in infos:
        count = int(np.prod(ne)) if ne else 1
        a = np.frombuffer(buf, dtype="<f4", count=count, offset=data + offset)
        tensors[name] = a.reshape(tuple(reversed(ne))).astype(np.float64)
    return meta, tensors


# --------------------------------------------------------------- ESM-2 model
def gelu(x):
    return 0.5 * x * (1.0 + torch.erf(x / np.sqrt(2.0)))


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def esm2_forward(meta, W, tokens):
    """tokens: LongTensor [B, T] (pad = 1). Returns dict of float64 tensors:
    logits [B,T,33], reprs list of [B,T,E], attn [B,L,H,T,T], contacts [B,T-2,T-2]."""
    E = int(meta["esm2.embedding_length"])
    L = int(meta["esm2.block_count"])
    H = int(meta["esm2.attention.head_count"])
    eps = float(meta.get("esm2.attention.layer_norm_epsilon", 1e-5))
    base = float(meta.get("esm2.rope.freq_base", 10000.0))
    hd = E // H
    t = lambda n: torch.from_numpy(W[n])
    ln = lambda x, p: torch.nn.functional.layer_norm(x, (E,), t(p + ".weight"), t(p + ".bias"), eps)
    lin = lambda x, p: torch.nn.functional.linear(x, t(p + ".weight"), t(p + ".bias"))

    B, T = tokens.shape
    pad = tokens.eq(PAD)                                   # [B, T]
    x = t("token_embd.weight")[tokens]                     # embed_scale = 1
    # token dropout (inference form)
    is_mask = tokens.eq(MASK)
    x = x.masked_fill(is_mask.unsqueeze(-1), 0.0)
    ratio_obs = is_mask.sum(-1).double() / (~pad).sum(-1).double()
    x = x * (1 - 0.15 * 0.8) / (1 - ratio_obs)[:, None, None]
    x = x * (1 - pad.unsqueeze(-1).double())
    reprs = [x]

    # rotary tables, positions 0..T-1
    inv_freq = 1.0 / base ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()                        # [T, hd]
    rope = lambda v: v * cos + rotate_half(v) * sin

    heads = lambda v: v.view(B, T, H, hd).transpose(1, 2)  # [B, H, T, hd]
    attns = []
    for i in range(L):
        p = f"blk.{i}."
        h = ln(x, p + "attn_norm")
        q = rope(heads(lin(h, p + "attn_q")) * hd ** -0.5)
        k = rope(heads(lin(h, p + "attn_k")))
        v = heads(lin(h, p + "attn_v"))
        s = q @ k.transpose(-1, -2)                        # [B, H, T, T]
        s = s.masked_fill(pad[:, None, None, :], float("-inf"))
        a = torch.softmax(s, dim=-1)
        attns.append(a)
        o = (a @ v).transpose(1, 2).reshape(B, T, E)
        x = x + lin(o, p + "attn_output")
        h = ln(x, p + "ffn_norm")
        x = x + lin(gelu(lin(h, p + "ffn_up")), p + "ffn_down")
        reprs.append(x)
    x = ln(x, "output_norm")
    reprs[-1] = x

    h = ln(gelu(lin(x, "lm_head.dense")), "lm_head.norm")
    logits = h @ t("token_embd.weight").T + t("output.bias")

    attn = torch.stack(attns, 1)                           # [B, L, H, T, T]
    keep = (~pad).double()
    attn = attn * (keep[:, :, None] * keep[:, None, :])[:, None, None]

    # contact head on the padded batch, exactly as ESM does it
    ne = tokens.ne(EOS).double()
    c = attn * (ne[:, :, None] * ne[:, None, :])[:, None, None]
    c = c[..., :-1, :-1][..., 1:, 1:]
    n = c.shape[-1]
    c = c.reshape(B, L * H, n, n)
    c = c + c.transpose(-1, -2)
    c = c - c.sum(-1, keepdim=True) * c.sum(-2, keepdim=True) / c.sum((-1, -2), keepdim=True)
    c = c.permute(0, 2, 3, 1)
    contacts = torch.sigmoid(lin(c, "contact").squeeze(-1))
    return {"logits": logits, "reprs": reprs, "attn": attn, "contacts": contacts}


def read_tokens(path):
    seqs = [[int(v) for v in line.split()] for line in open(path) if line.strip()]
    T = max(len(s) for s in seqs)
    tokens = torch.full((len(seqs), T), PAD, dtype=torch.long)
    for b, s in enumerate(seqs):
        tokens[b, :len(s)] = torch.tensor(s)
    return seqs, tokens


def main(argv):
    if len(argv) not in (4, 5) or (len(argv) == 5 and argv[4] != "padded"):
        sys.exit("usage: esm2_torch.py MODEL.gguf TOKENS.txt OUTDIR [padded]")
    meta, W = read_gguf(argv[1])
    seqs, tokens = read_tokens(argv[2])
    out = argv[3]
    with torch.no_grad():
        r = esm2_forward(meta, W, tokens)
    save = lambda name, a: np.savetxt(os.path.join(out, name), a, fmt="%.9e")
    for b, s in enumerate(seqs):
        n = tokens.shape[1] if len(argv) == 5 else len(s)
        save(f"s{b+1}_logits.txt", r["logits"][b, :n].numpy())
        for l, rep in enumerate(r["reprs"]):
            save(f"s{b+1}_repr{l}.txt", rep[b, :n].numpy())
        save(f"s{b+1}_attn.txt", r["attn"][b, :, :, :n, :n].reshape(-1, n).numpy())
        save(f"s{b+1}_contacts.txt", r["contacts"][b, :n - 2, :n - 2].numpy())


if __name__ == "__main__":
    main(sys.argv)
