#!/usr/bin/python3
"""Small random Hugging Face checkpoints of the Llama family (LlamaForCausalLM, Qwen2ForCausalLM,
MistralForCausalLM) and their forward pass in float64 NumPy: no torch, no transformers, no safetensors package.

    hf_models.py write CASE DIR SEED [BREAK]    a checkpoint directory (config.json, safetensors, a tokenizer)
    hf_models.py forward DIR TOKENS.npy OUT.npy  logits float32 [T, vocab] or [B, T, vocab] for int32 ids
    hf_models.py greedy DIR PROMPT_IDS N OUT.json   N greedy tokens after the comma-separated prompt ids,
                                                  with each step's margin between the best two logits
    hf_models.py cases                           the case names

The forward is transformers' maths written out: embedding, per layer x += o_proj(attention(rope(q), rope(k),
v)) over RMSNorm(x), x += down(silu(gate(h)) * up(h)) over RMSNorm(x), the final RMSNorm and the head (tied
to the embedding or lm_head.weight). RoPE is the rotate-half form, inverse frequencies base^(-2i/D) with
rope_type llama3's rescaling; query head h reads key/value head h // (H / Hkv); Mistral's sliding window lets
query i see keys i - W < j <= i. BF16 is written by rounding float32 bits to nearest even."""
import json
import math
import struct
import sys

import numpy as np

# name: (architecture, dtype, shards, config overrides, extras). Sizes stay tiny for lavapipe.
CASES = {
    # Llama 2: multi-head attention, RoPE base 10000, untied head, transformers 4's config (rope_theta at the
    # top, no head_dim), old rotary buffers in the file.
    "llama2": ("LlamaForCausalLM", "F32", 1,
               dict(hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=4,
                    rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False), {"inv_freq": True}),
    # Llama 3.x: grouped-query attention, rope_type llama3 in transformers 5's rope_parameters, a head dim
    # that is not hidden / heads, tied head, BF16 in three shards.
    "llama3": ("LlamaForCausalLM", "BF16", 3,
               dict(hidden_size=48, intermediate_size=64, num_attention_heads=4, num_key_value_heads=2,
                    head_dim=16, rms_norm_eps=1e-5, tie_word_embeddings=True,
                    rope_parameters=dict(rope_type="llama3", rope_theta=500000.0, factor=8.0,
                                         low_freq_factor=1.0, high_freq_factor=4.0,
                                         original_max_position_embeddings=32)), {}),
    # SmolLM2: Llama with a tied head, 3 heads sharing 1 KV head; F16; the model's vocabulary padded past
    # the tokenizer's 257 ids.
    "smollm2": ("LlamaForCausalLM", "F16", 1,
                dict(hidden_size=48, intermediate_size=80, num_attention_heads=3, num_key_value_heads=1,
                     rms_norm_eps=1e-5, rope_theta=100000.0, tie_word_embeddings=True, vocab_size=300), {}),
    # Llama with attention_bias and mlp_bias: every linear layer has a bias.
    "llama-bias": ("LlamaForCausalLM", "F32", 1,
                   dict(hidden_size=32, intermediate_size=40, num_attention_heads=2, num_key_value_heads=1,
                        attention_bias=True, mlp_bias=True, tie_word_embeddings=False), {}),
    # Qwen2: q/k/v biases; tied and sharded in F32, untied in BF16 in one file.
    "qwen2-tied": ("Qwen2ForCausalLM", "F32", 2,
                   dict(hidden_size=32, intermediate_size=56, num_attention_heads=4, num_key_value_heads=2,
                        rope_theta=1000000.0, tie_word_embeddings=True, use_sliding_window=False,
                        sliding_window=32768, max_window_layers=2), {}),
    "qwen2-untied": ("Qwen2ForCausalLM", "BF16", 1,
                     dict(hidden_size=32, intermediate_size=56, num_attention_heads=4, num_key_value_heads=1,
                          rope_theta=1000000.0, tie_word_embeddings=False), {}),
    # Chat runs from the CLI (tests/train/test_chat_cli.cpp): Llama 3's layout (GQA, rope_type llama3, tied
    # head) with room past the 256 byte ids for a tokenizer.json's merges and chat special tokens.
    "chat-llama": ("LlamaForCausalLM", "F32", 1,
                   dict(hidden_size=32, intermediate_size=64, num_attention_heads=4, num_key_value_heads=2,
                        rms_norm_eps=1e-5, tie_word_embeddings=True, vocab_size=272,
                        rope_scaling=dict(rope_type="llama3", factor=4.0, low_freq_factor=1.0,
                                          high_freq_factor=4.0, original_max_position_embeddings=16),
                        rope_theta=10000.0), {}),
    # Mistral: a sliding window longer than every sequence used, F16.
    "mistral": ("MistralForCausalLM", "F16", 1,
                dict(hidden_size=32, intermediate_size=64, num_attention_heads=4, num_key_value_heads=2,
                     sliding_window=48, tie_word_embeddings=False), {}),
}

MODEL_TYPES = {"LlamaForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2", "MistralForCausalLM": "mistral"}
KV_DEFAULT = {"llama": None, "qwen2": 32, "mistral": 8}

# A file of the checkpoint broken on purpose (tests/train/test_hf_models.cpp asserts each refusal).
BREAKS = ["unknown-architecture", "missing-field", "bad-kv-heads", "bad-eps", "rope-yarn", "missing-shard",
          "wrong-shape", "wrong-dtype", "missing-tensor", "unexpected-tensor", "untied-copy-differs"]


def byte_to_unicode():
    """GPT-2's spelling of bytes in vocab.json: printable Latin-1 bytes as themselves, the 68 others as
    U+0100, U+0101, ... in byte order."""
    printable = [b for b in range(256) if 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255]
    others = [b for b in range(256) if b not in printable]
    return {**{b: chr(b) for b in printable}, **{b: chr(256 + i) for i, b in enumerate(others)}}


def to_bf16_bits(x):
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def encode(values, dtype):
    if dtype == "F32":
        return np.asarray(values, dtype="<f4").tobytes()
    if dtype == "F16":
        return np.asarray(values, dtype="<f2").tobytes()
    if dtype == "BF16":
        return to_bf16_bits(values).astype("<u2").tobytes()
    if dtype == "F64":
        return np.asarray(values, dtype="<f8").tobytes()
    raise ValueError(dtype)


def write_safetensors(path, tensors, dtypes):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, values in tensors.items():
        blob = encode(values, dtypes.get(name, dtypes["*"]))
        header[name] = {"dtype": dtypes.get(name, dtypes["*"]), "shape": list(values.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data, tensors = blob[8 + n:], {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        raw = data[e["data_offsets"][0]:e["data_offsets"][1]]
        if e["dtype"] == "BF16":
            values = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            values = np.frombuffer(raw, dtype={"F32": "<f4", "F16": "<f2"}[e["dtype"]])
        tensors[name] = values.astype(np.float64).reshape(e["shape"])
    return tensors


def read_weights(directory):
    import os
    index = f"{directory}/model.safetensors.index.json"
    if not os.path.exists(f"{directory}/model.safetensors") and os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    tensors = {}
    for name in files:
        tensors.update(read_safetensors(f"{directory}/{name}"))
    return tensors


def full_config(arch, overrides):
    cfg = dict(architectures=[arch], model_type=MODEL_TYPES[arch], vocab_size=257, num_hidden_layers=2,
               max_position_embeddings=64, hidden_act="silu", bos_token_id=None, eos_token_id=256)
    cfg.update(overrides)
    return cfg


def shapes(cfg):
    """Every tensor's name and shape as the family's checkpoints hold them."""
    family = cfg["model_type"]
    C, V, H = cfg["hidden_size"], cfg["vocab_size"], cfg["num_attention_heads"]
    G = cfg.get("num_key_value_heads") or KV_DEFAULT[family] or H
    D = cfg.get("head_dim") or C // H
    F = cfg["intermediate_size"]
    qkv_bias = family == "qwen2" or cfg.get("attention_bias", False)
    o_bias = family == "llama" and cfg.get("attention_bias", False)
    mlp_bias = family == "llama" and cfg.get("mlp_bias", False)
    out = [("model.embed_tokens.weight", (V, C))]
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        out.append((p + "input_layernorm.weight", (C,)))
        for proj, rows in (("q_proj", H * D), ("k_proj", G * D), ("v_proj", G * D)):
            out.append((p + f"self_attn.{proj}.weight", (rows, C)))
            if qkv_bias:
                out.append((p + f"self_attn.{proj}.bias", (rows,)))
        out.append((p + "self_attn.o_proj.weight", (C, H * D)))
        if o_bias:
            out.append((p + "self_attn.o_proj.bias", (C,)))
        out.append((p + "post_attention_layernorm.weight", (C,)))
        for proj, shape in (("gate_proj", (F, C)), ("up_proj", (F, C)), ("down_proj", (C, F))):
            out.append((p + f"mlp.{proj}.weight", shape))
            if mlp_bias:
                out.append((p + f"mlp.{proj}.bias", shape[:1]))
    out.append(("model.norm.weight", (C,)))
    if not cfg.get("tie_word_embeddings", False):
        out.append(("lm_head.weight", (V, C)))
    return out


def random_tensors(cfg, rng, dtype):
    tensors = {}
    for name, shape in shapes(cfg):
        if name.endswith("norm.weight"):
            values = 1.0 + 0.3 * rng.standard_normal(shape)
        elif name.endswith(".bias"):
            values = 0.2 * rng.standard_normal(shape)
        elif "embed" in name or name == "lm_head.weight":  # logits of a few units
            values = 0.3 * rng.standard_normal(shape)
        else:  # weights scaled by fan-in so activations stay O(1)
            values = rng.standard_normal(shape) / math.sqrt(shape[1])
        values = values.astype(np.float32)
        # Stored values are exact in the stored type, so the reference reads what Helios reads.
        if dtype == "F16":
            values = values.astype(np.float16).astype(np.float32)
        elif dtype == "BF16":
            values = (to_bf16_bits(values).astype(np.uint32) << 16).view(np.float32)
        tensors[name] = values
    return tensors


def write_tokenizer(directory):
    """GPT-2 byte-level BPE with no merges: id b is byte b, 256 is <|endoftext|>."""
    table = byte_to_unicode()
    vocab = {table[b]: b for b in range(256)}
    vocab["<|endoftext|>"] = 256
    with open(f"{directory}/vocab.json", "w") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(f"{directory}/merges.txt", "w") as f:
        f.write("#version: 0.2\n")


def write(case, directory, seed, broken=None):
    import os
    arch, dtype, shards, overrides, extras = CASES[case]
    cfg = full_config(arch, overrides)
    rng = np.random.default_rng(seed)
    tensors = random_tensors(cfg, rng, dtype)
    if extras.get("inv_freq"):
        D = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
        for layer in range(cfg["num_hidden_layers"]):
            tensors[f"model.layers.{layer}.self_attn.rotary_emb.inv_freq"] = \
                (10000.0 ** (-np.arange(0, D, 2) / D)).astype(np.float32)
    dtypes = {"*": dtype}
    names = list(tensors)
    if broken == "unknown-architecture":
        cfg["architectures"] = ["GemmaForCausalLM"]
    elif broken == "missing-field":
        del cfg["hidden_size"]
    elif broken == "bad-kv-heads":
        cfg["num_key_value_heads"] = 3
    elif broken == "bad-eps":
        cfg["rms_norm_eps"] = -1e-6
    elif broken == "rope-yarn":
        cfg["rope_scaling"] = dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=32)
    elif broken == "wrong-shape":
        name = "model.layers.1.mlp.up_proj.weight"
        tensors[name] = tensors[name].T.copy()
    elif broken == "wrong-dtype":
        dtypes["model.layers.0.self_attn.v_proj.weight"] = "F64"
    elif broken == "missing-tensor":
        del tensors["model.layers.1.post_attention_layernorm.weight"]
    elif broken == "unexpected-tensor":
        tensors["model.layers.2.input_layernorm.weight"] = np.ones(cfg["hidden_size"], dtype=np.float32)
    elif broken == "untied-copy-differs":
        tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"] + 1.0
    names = list(tensors)
    os.makedirs(directory, exist_ok=True)
    with open(f"{directory}/config.json", "w") as f:
        json.dump(cfg, f, indent=2)
    write_tokenizer(directory)
    if shards == 1:
        write_safetensors(f"{directory}/model.safetensors", tensors, dtypes)
        return
    per = math.ceil(len(names) / shards)
    weight_map = {}
    for s in range(shards):
        file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: tensors[n] for n in names[s * per:(s + 1) * per]}
        weight_map.update({n: file for n in part})
        if not (broken == "missing-shard" and s == shards - 1):
            write_safetensors(f"{directory}/{file}", part, dtypes)
    with open(f"{directory}/model.safetensors.index.json", "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=2)


def inverse_frequencies(cfg, D):
    rope = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    base = rope.get("rope_theta", cfg.get("rope_theta", 10000.0))
    inv = base ** (-np.arange(0, D, 2, dtype=np.float64) / D)
    if rope.get("rope_type", rope.get("type", "default")) == "llama3":
        factor, low, high = rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"]
        old = rope["original_max_position_embeddings"]
        out = []
        for f in inv:
            wavelength = 2 * math.pi / f
            if wavelength < old / high:
                out.append(f)
            elif wavelength > old / low:
                out.append(f / factor)
            else:
                smooth = (old / wavelength - low) / (high - low)
                out.append((1 - smooth) * f / factor + smooth * f)
        inv = np.array(out)
    return inv


def rope(x, inv):
    """x [T, heads, D]: rotate-half RoPE at positions 0..T-1."""
    T, D = x.shape[0], x.shape[2]
    angles = np.arange(T, dtype=np.float64)[:, None] * inv[None, :]
    cos = np.concatenate([np.cos(angles)] * 2, axis=1)[:, None, :]
    sin = np.concatenate([np.sin(angles)] * 2, axis=1)[:, None, :]
    rotated = np.concatenate([-x[..., D // 2:], x[..., :D // 2]], axis=-1)
    return x * cos + rotated * sin


def rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * w


def forward(cfg, p, tokens):
    family = cfg["model_type"]
    T, C, H = len(tokens), cfg["hidden_size"], cfg["num_attention_heads"]
    G = cfg.get("num_key_value_heads") or KV_DEFAULT[family] or H
    D = cfg.get("head_dim") or C // H
    eps = cfg.get("rms_norm_eps", 1e-6)
    window = cfg.get("sliding_window") if family == "mistral" else None
    inv = inverse_frequencies(cfg, D)
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    hidden_mask = (j > i) | ((i - j >= window) if window else False)

    def linear(x, name):
        y = x @ p[name + ".weight"].T
        return y + p[name + ".bias"] if name + ".bias" in p else y

    x = p["model.embed_tokens.weight"][tokens]
    for layer in range(cfg["num_hidden_layers"]):
        pre = f"model.layers.{layer}."
        h = rms_norm(x, p[pre + "input_layernorm.weight"], eps)
        q = rope(linear(h, pre + "self_attn.q_proj").reshape(T, H, D), inv)
        k = rope(linear(h, pre + "self_attn.k_proj").reshape(T, G, D), inv)
        v = linear(h, pre + "self_attn.v_proj").reshape(T, G, D)
        k, v = np.repeat(k, H // G, axis=1), np.repeat(v, H // G, axis=1)
        scores = np.einsum("thd,uhd->htu", q, k) / math.sqrt(D)
        scores[:, hidden_mask] = -np.inf
        probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        o = np.einsum("htu,uhd->thd", probs, v).reshape(T, H * D)
        x = x + linear(o, pre + "self_attn.o_proj")
        h = rms_norm(x, p[pre + "post_attention_layernorm.weight"], eps)
        gate = linear(h, pre + "mlp.gate_proj")
        x = x + linear(gate / (1 + np.exp(-gate)) * linear(h, pre + "mlp.up_proj"), pre + "mlp.down_proj")
    x = rms_norm(x, p["model.norm.weight"], eps)
    head = p["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else p["lm_head.weight"]
    return x @ head.T


def load(directory):
    with open(f"{directory}/config.json") as f:
        cfg = json.load(f)
    return cfg, read_weights(directory)


def main():
    command = sys.argv[1]
    if command == "cases":
        print(" ".join(CASES))
    elif command == "write":
        write(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] if len(sys.argv) > 5 else None)
    elif command == "forward":
        cfg, params = load(sys.argv[2])
        tokens = np.load(sys.argv[3]).astype(np.int64)
        rows = tokens.reshape(-1, tokens.shape[-1])
        logits = np.stack([forward(cfg, params, row) for row in rows])
        np.save(sys.argv[4], logits.reshape(tokens.shape + (logits.shape[-1],)).astype(np.float32))
    elif command == "greedy":
        cfg, params = load(sys.argv[2])
        ids = [int(t) for t in sys.argv[3].split(",")]
        generated, margins = [], []
        for _ in range(int(sys.argv[4])):
            last = forward(cfg, params, np.array(ids))[-1]
            order = np.argsort(-last, kind="stable")
            generated.append(int(order[0]))
            margins.append(float(last[order[0]] - last[order[1]]))
            ids.append(int(order[0]))
        with open(sys.argv[5], "w") as f:
            json.dump({"generated": generated, "margins": margins}, f)
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main()
