#!/usr/bin/env python3
"""Helios' LoRA adapters against PEFT on the GPU host. For each model (random weights saved by transformers
with save_pretrained in f32: a small Llama with an untied head, a small Qwen2 with q/k/v biases and a tied
head, and the real Qwen2.5-0.5B shape):

  1. train     helios-train --init-from DIR --lora-rank 8 --lora-alpha 16 --lora-dropout 0.05 on every
               projection, a few steps (byte tokens of the default corpus), then export --format peft
  2. peft      PeftModel.from_pretrained(the f32 base, the exported adapter) vs helios-train logits --resume RUN
               (f32, TF32 off, fixed random ids): max abs difference <= 1e-3
  3. merged    export --format hf --merge through AutoModelForCausalLM vs the same Helios logits: <= 1e-3
  4. half base (the Qwen2.5-0.5B shape only) the same training with --precision mixed --base-dtype f16, and
               with --precision bf16 --base-dtype bf16: PEFT over the base whose matrices and embeddings are
               rounded to f16 (bf16) (norms and biases stay f32, as Helios stores them) vs Helios' f32 logits,
               and the merged export (the directory's own base values + (alpha/r) B A) vs PEFT over the
               unrounded base: <= 1e-3

Prints a table and writes OUT/peft-check.json; exits 1 when a check fails. The helpers (run, compare,
load_f32, model_logits, torch_logits, f32_device, report, the published configurations) are hf-models-check.py's.

    python3 bench/device/peft-check.py [--models llama-small,qwen2-small,qwen2.5-0.5b] [--out DIR] [--steps 8]
"""
import argparse
import importlib.util
import json
import os
import shutil
import sys

import numpy as np
import peft
import torch
import transformers
from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

_spec = importlib.util.spec_from_file_location(
    "hf_models_check", os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf-models-check.py"))
hf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hf)

CONFIGS = {
    "llama-small": (LlamaConfig, dict(
        vocab_size=512, hidden_size=128, intermediate_size=352, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, hidden_act="silu", max_position_embeddings=512, rms_norm_eps=1e-5,
        rope_theta=10000.0, tie_word_embeddings=False, attention_bias=False, mlp_bias=False)),
    "qwen2-small": (Qwen2Config, dict(
        vocab_size=512, hidden_size=128, intermediate_size=320, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=1, hidden_act="silu", max_position_embeddings=512, rms_norm_eps=1e-6,
        rope_theta=1000000.0, tie_word_embeddings=True, use_sliding_window=False, sliding_window=512,
        max_window_layers=2)),
    "qwen2.5-0.5b": hf.CONFIGS["qwen2.5-0.5b"],
}
TOLERANCE = 1e-3
LORA = ["--lora-rank", "8", "--lora-alpha", "16", "--lora-dropout", "0.05",
        "--lora-targets", "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"]


def peft_logits(base_dir, adapter_dir, ids, device, half_base=None):
    """PEFT's logits: the f32 base (its matrices rounded to half_base, a torch dtype, when given: to nearest
    even, as Helios rounds its frozen base) with the adapter loaded over it."""
    model = hf.load_f32(base_dir)
    if half_base is not None:
        with torch.no_grad():
            for p in model.parameters():
                if p.dim() == 2:
                    p.copy_(p.to(half_base).float())
    return hf.model_logits(peft.PeftModel.from_pretrained(model, adapter_dir), ids, device)


def train_and_export(root, base, tag, steps, extra):
    """A LoRA run over `base`, its adapter and merged model exported; returns (run dir, adapter, merged)."""
    run_dir, adapter, merged = (os.path.join(root, f"{x}-{tag}") for x in ("run", "peft", "merged"))
    hf.run(["helios-train", "--init-from", base, *LORA, *extra, "--steps", str(steps), "--batch", "4",
            "--seq-len", "128", "--lr", "2e-3", "--warmup", "0", "--eval-every", "0", "--keep", "1",
            "--out", run_dir], os.path.join(root, f"train-{tag}.log"))
    hf.run(["helios-train", "export", "--format", "peft", "--run", run_dir, "--out", adapter],
           os.path.join(root, f"export-peft-{tag}.log"))
    hf.run(["helios-train", "export", "--format", "hf", "--merge", "--run", run_dir, "--out", merged,
            "--max-shard-size", "1GB"], os.path.join(root, f"export-merged-{tag}.log"))
    return run_dir, adapter, merged


def helios_logits(root, run_dir, ids_path, tag):
    out = os.path.join(root, f"helios-{tag}.npy")
    hf.run(["helios-train", "logits", "--resume", run_dir, "--tokens", ids_path, "--out", out],
           os.path.join(root, f"logits-{tag}.log"))
    return np.load(out)


def check_model(name, args, ids_path, ids, device):
    cls, values = CONFIGS[name]
    root = os.path.join(args.out, name)
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cls(**values))
    base = os.path.join(root, "base")
    model.save_pretrained(base, max_shard_size="1GB")
    del model
    torch.cuda.empty_cache()
    rows = []
    runs = [("f32", ["--precision", "f32", "--base-dtype", "f32"], None)]
    if name == "qwen2.5-0.5b":
        runs.append(("f16-base", ["--precision", "mixed", "--base-dtype", "f16"], torch.float16))
        runs.append(("bf16-base", ["--precision", "bf16", "--base-dtype", "bf16"], torch.bfloat16))
    for tag, extra, half in runs:
        run_dir, adapter, merged = train_and_export(root, base, tag, args.steps, extra)
        with open(os.path.join(adapter, "adapter_config.json")) as f:
            config = json.load(f)
        got = helios_logits(root, run_dir, ids_path, tag)
        merged_logits = hf.torch_logits(merged, ids, device)
        # The merge adds (alpha/r) B A to the base directory's own values (not the f16-rounded copy Helios
        # trained over), so with a half base it is compared with PEFT over the unrounded base instead.
        pairs = [(f"{tag}: PeftModel", got, peft_logits(base, adapter, ids, device, half))]
        if half is not None:
            pairs.append((f"{tag}: merged vs PeftModel", merged_logits, peft_logits(base, adapter, ids, device)))
        else:
            pairs.append((f"{tag}: merged export", got, merged_logits))
        for stage, ours, ref in pairs:
            rows.append(hf.compare(name, stage, ours, ref, TOLERANCE))
            rows[-1]["adapter_config"] = {k: config.get(k) for k in ("r", "lora_alpha", "lora_dropout",
                                                                        "target_modules")}
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(CONFIGS))
    ap.add_argument("--out", default="/tmp/helios-peft-check")
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args()
    device = hf.f32_device()
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(4242)
    rows = []
    for name in args.models.split(","):
        ids = rng.integers(0, CONFIGS[name][1]["vocab_size"], size=(2, 128), dtype=np.int32)
        ids_path = os.path.join(args.out, f"{name}-ids.npy")
        np.save(ids_path, ids)
        try:
            rows += check_model(name, args, ids_path, ids, device)
        except Exception as e:  # one model's failure is reported, the others still run
            rows.append({"model": name, "stage": "error", "error": str(e), "ok": False})
    hf.report(rows, {"transformers": transformers.__version__, "peft": peft.__version__, "torch": torch.__version__,
                     "device": torch.cuda.get_device_name() if device == "cuda" else device},
              os.path.join(args.out, "peft-check.json"))


if __name__ == "__main__":
    main()
