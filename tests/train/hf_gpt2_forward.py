#!/usr/bin/python3
"""GPT-2's forward pass in float64 NumPy, read straight from a Hugging Face directory (config.json and
model.safetensors, parsed here with json + numpy.frombuffer: no transformers, no safetensors package).

    hf_gpt2_forward.py DIR TOKENS.npy LOGITS.npy

TOKENS.npy: int32 [T]; LOGITS.npy receives float32 [T, vocab]. The maths is GPT2LMHeadModel's: learned
positions, pre-LayerNorm blocks, Conv1D weights stored [in, out], causal attention scaled by 1/sqrt(D),
gelu_new (tanh form), final LayerNorm, the head tied to wte."""
import json
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16}


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = data[begin:end]
        if entry["dtype"] == "BF16":
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            values = bits.view(np.float32)
        else:
            values = np.frombuffer(raw, dtype=np.dtype(DTYPES[entry["dtype"]]).newbyteorder("<"))
        tensors[name.removeprefix("transformer.")] = values.astype(np.float64).reshape(entry["shape"])
    return tensors


def layer_norm(x, w, b, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def forward(cfg, p, tokens):
    T, C, H = len(tokens), cfg["n_embd"], cfg["n_head"]
    D, eps = C // H, cfg["layer_norm_epsilon"]
    x = p["wte.weight"][tokens] + p["wpe.weight"][:T]
    mask = np.triu(np.ones((T, T), dtype=bool), k=1)
    for layer in range(cfg["n_layer"]):
        w = lambda name: p[f"h.{layer}.{name}"]
        h = layer_norm(x, w("ln_1.weight"), w("ln_1.bias"), eps)
        qkv = h @ w("attn.c_attn.weight") + w("attn.c_attn.bias")
        q, k, v = (qkv[:, i * C:(i + 1) * C].reshape(T, H, D).transpose(1, 0, 2) for i in range(3))
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(D)
        scores[:, mask] = -np.inf
        probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        o = (probs @ v).transpose(1, 0, 2).reshape(T, C)
        x = x + o @ w("attn.c_proj.weight") + w("attn.c_proj.bias")
        h = layer_norm(x, w("ln_2.weight"), w("ln_2.bias"), eps)
        x = x + gelu_new(h @ w("mlp.c_fc.weight") + w("mlp.c_fc.bias")) @ w("mlp.c_proj.weight") \
            + w("mlp.c_proj.bias")
    x = layer_norm(x, p["ln_f.weight"], p["ln_f.bias"], eps)
    return x @ p["wte.weight"].T


def main():
    directory, tokens_path, out_path = sys.argv[1:4]
    with open(f"{directory}/config.json") as f:
        cfg = json.load(f)
    assert cfg["model_type"] == "gpt2" and cfg["activation_function"] == "gelu_new", cfg
    params = read_safetensors(f"{directory}/model.safetensors")
    tokens = np.load(tokens_path).astype(np.int64)
    np.save(out_path, forward(cfg, params, tokens).astype(np.float32))


if __name__ == "__main__":
    main()
