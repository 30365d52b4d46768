#!/usr/bin/python3
"""A PEFT LoRA adapter directory checked without peft, torch or safetensors (NumPy only), against the Hugging
Face base it adapts (a directory tests/train/hf_models.py reads):

    peft_check.py layout ADAPTER BASE              adapter_config.json's keys and values as PEFT writes them, and
                                                   adapter_model.safetensors' names, shapes and dtype as PEFT
                                                   saves them for the base's architecture; prints "layout ok: N"
    peft_check.py forward BASE ADAPTER TOKENS OUT  float64 logits of the base with W + (alpha / r) B A on every
                                                   adapted module (hf_models.py's forward)
    peft_check.py merged BASE ADAPTER MERGED       MERGED (a plain model directory) holds exactly the base with
                                                   W + (alpha / r) B A, within f32 rounding; prints "merge ok"

The names are PEFT's for a causal LM: base_model.model.model.layers.N.self_attn.{q,k,v,o}_proj and
.mlp.{gate,up,down}_proj, each with lora_A.weight [r, in] and lora_B.weight [out, r]."""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_models  # noqa: E402

ATTENTION = ["q_proj", "k_proj", "v_proj", "o_proj"]
MLP = ["gate_proj", "up_proj", "down_proj"]
# The keys a current PEFT's LoraConfig.save_pretrained writes that decide what the adapter computes.
REQUIRED = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "bias": "none", "fan_in_fan_out": False,
            "use_rslora": False, "use_dora": False, "init_lora_weights": True, "layers_to_transform": None,
            "modules_to_save": None, "rank_pattern": {}, "alpha_pattern": {}, "inference_mode": True}


def module_shapes(cfg):
    """(in, out) of every module PEFT can adapt in one layer of the base."""
    C, H = cfg["hidden_size"], cfg["num_attention_heads"]
    G = cfg.get("num_key_value_heads") or H
    D = cfg.get("head_dim") or C // H
    hid = cfg["intermediate_size"]
    return {"q_proj": (C, H * D), "k_proj": (C, G * D), "v_proj": (C, G * D), "o_proj": (H * D, C),
            "gate_proj": (C, hid), "up_proj": (C, hid), "down_proj": (hid, C)}


def module_path(layer, module):
    return f"model.layers.{layer}.{'self_attn' if module in ATTENTION else 'mlp'}.{module}"


def read_adapter(adapter):
    with open(f"{adapter}/adapter_config.json") as f:
        config = json.load(f)
    with open(f"{adapter}/adapter_model.safetensors", "rb") as f:
        blob = f.read()
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + n])
    return config, header, hf_models.read_safetensors(f"{adapter}/adapter_model.safetensors")


def layout(adapter, base):
    config, header, _ = read_adapter(adapter)
    cfg, _ = hf_models.load(base)
    for key, value in REQUIRED.items():
        assert key in config and config[key] == value, f"adapter_config.json: {key} is {config.get(key)!r}, " \
                                                       f"PEFT writes {value!r}"
    r, targets = config["r"], config["target_modules"]
    assert isinstance(r, int) and r > 0, f"r {r!r}"
    assert config["lora_alpha"] > 0 and 0 <= config["lora_dropout"] < 1
    assert isinstance(config["base_model_name_or_path"], str)
    shapes = module_shapes(cfg)
    assert targets and all(t in shapes for t in targets), f"target_modules {targets}"
    want = {}
    for layer in range(cfg["num_hidden_layers"]):
        for module in ATTENTION + MLP:
            if module in targets:
                fan_in, fan_out = shapes[module]
                path = "base_model.model." + module_path(layer, module)
                want[path + ".lora_A.weight"] = [r, fan_in]
                want[path + ".lora_B.weight"] = [fan_out, r]
    got = {k: v for k, v in header.items() if k != "__metadata__"}
    assert set(got) == set(want), f"names differ: missing {sorted(set(want) - set(got))[:4]}, " \
                                  f"extra {sorted(set(got) - set(want))[:4]}"
    for name, shape in want.items():
        assert got[name]["shape"] == shape, f"{name}: shape {got[name]['shape']}, PEFT's is {shape}"
        assert got[name]["dtype"] == "F32", f"{name}: dtype {got[name]['dtype']}"
    print(f"layout ok: {len(want)} tensors, r {r}, alpha {config['lora_alpha']}, targets {','.join(targets)}")


def merged_params(base, adapter):
    """The base's weights with (alpha / r) B A added to every adapted module, float64."""
    config, _, tensors = read_adapter(adapter)
    cfg, params = hf_models.load(base)
    scale = config["lora_alpha"] / config["r"]
    for name, a in tensors.items():
        if not name.endswith(".lora_A.weight"):
            continue
        module = name[len("base_model.model."):-len(".lora_A.weight")]
        b = tensors[name.replace(".lora_A.", ".lora_B.")]
        params[module + ".weight"] = params[module + ".weight"] + scale * (b @ a)
    return cfg, params


def forward(base, adapter, tokens_path, out):
    cfg, params = merged_params(base, adapter)
    tokens = np.load(tokens_path).astype(np.int64)
    rows = tokens.reshape(-1, tokens.shape[-1])
    logits = np.stack([hf_models.forward(cfg, params, row) for row in rows])
    np.save(out, logits.reshape(tokens.shape + (logits.shape[-1],)).astype(np.float32))


def merged(base, adapter, merged_dir):
    _, want = merged_params(base, adapter)
    _, base_params = hf_models.load(base)
    got = hf_models.read_weights(merged_dir)
    assert set(got) == set(want), f"tensors differ: {sorted(set(got) ^ set(want))[:4]}"
    changed = 0
    for name, w in want.items():
        g = got[name]
        assert g.shape == w.shape, f"{name}: shape {g.shape} vs {w.shape}"
        # One f32 rounding of the float64 sum: half an ulp of the result.
        tol = np.abs(w) * 2.0 ** -24 + 1e-30
        err = np.abs(g - w)
        assert np.all(err <= tol), f"{name}: off by {err.max()} (tolerance {tol[err.argmax()]})"
        changed += int(not np.array_equal(w, base_params[name]))
    assert changed > 0, "no tensor differs from the base: the adapters were not merged"
    print(f"merge ok: {len(want)} tensors, {changed} merged")


def main():
    command = sys.argv[1]
    if command == "layout":
        layout(sys.argv[2], sys.argv[3])
    elif command == "forward":
        forward(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    elif command == "merged":
        merged(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main()
