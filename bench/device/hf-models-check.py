#!/usr/bin/env python3
"""Open models on the GPU host: random-weight transformers models in the exact configurations of
SmolLM2-135M, Qwen2.5-0.5B and Llama-3.2-1B, saved with save_pretrained (f32, sharded, and bf16), against
Helios:

  1. import      helios-train logits --init-from the f32 directory vs transformers' f32 logits
                 (TF32 off), on fixed random ids (4 sequences x 256); tolerance 1e-3 max abs
  2. bf16 file   the same from the bf16 directory (both read the same bf16 values; f32 compute, 1e-3)
  3. precision   --precision P on the bf16 directory (P = f32 | mixed | bf16 where the build has it) vs
                 transformers f32 on those weights: f32 1e-3; mixed and bf16 5e-2 with argmax agreement
                 >= 99%
  4. trained     helios-train --init-from DIR --steps 20 (byte tokens of the default corpus), export
                 --format hf --max-shard-size 1GB, AutoModelForCausalLM.from_pretrained(export) vs
                 helios-train logits --resume RUN (f32, 1e-3)

Prints a table and writes OUT/hf-models-check.json; exits 1 when a check fails.

    python3 bench/device/hf-models-check.py [--precision f32] [--models smollm2-135m,qwen2.5-0.5b,llama-3.2-1b]
        [--out /tmp/helios-hf-models] [--steps 20]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

# The published config.json values (HuggingFaceTB/SmolLM2-135M, Qwen/Qwen2.5-0.5B, meta-llama/Llama-3.2-1B).
CONFIGS = {
    "smollm2-135m": (LlamaConfig, dict(
        vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
        num_key_value_heads=3, head_dim=64, hidden_act="silu", max_position_embeddings=8192, rms_norm_eps=1e-5,
        rope_theta=100000.0, rope_scaling=None, tie_word_embeddings=True, attention_bias=False, mlp_bias=False,
        bos_token_id=0, eos_token_id=0)),
    "qwen2.5-0.5b": (Qwen2Config, dict(
        vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
        num_key_value_heads=2, hidden_act="silu", max_position_embeddings=32768, rms_norm_eps=1e-6,
        rope_theta=1000000.0, tie_word_embeddings=True, use_sliding_window=False, sliding_window=32768,
        max_window_layers=24, bos_token_id=151643, eos_token_id=151643)),
    "llama-3.2-1b": (LlamaConfig, dict(
        vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
        num_key_value_heads=8, head_dim=64, hidden_act="silu", max_position_embeddings=131072, rms_norm_eps=1e-5,
        rope_theta=500000.0, rope_scaling=dict(rope_type="llama3", factor=32.0, low_freq_factor=1.0,
                                               high_freq_factor=4.0, original_max_position_embeddings=8192),
        tie_word_embeddings=True, attention_bias=False, mlp_bias=False, bos_token_id=128000,
        eos_token_id=128001)),
}
F32_TOLERANCE = 1e-3
LOW_TOLERANCE, LOW_ARGMAX = 5e-2, 0.99  # mixed (f16 GEMM inputs) and bf16 compute


def run(cmd, log):
    """Runs a helios-train command; its output goes to `log`; returns seconds taken."""
    t0 = time.time()
    with open(log, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        with open(log) as f:
            sys.stderr.write(f.read()[-3000:])
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode} (log {log})")
    return time.time() - t0


def load_f32(directory):
    try:  # transformers 5 (and 4.56+) name the argument dtype, earlier ones torch_dtype
        return AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32)
    except TypeError:
        return AutoModelForCausalLM.from_pretrained(directory, torch_dtype=torch.float32)


def model_logits(model, ids, device):
    """A causal LM's logits in float64, one row of ids at a time; the model is released afterwards."""
    model = model.to(device).eval()
    with torch.no_grad():
        out = [model(torch.from_numpy(row[None].astype(np.int64)).to(device)).logits[0].double().cpu().numpy()
               for row in ids]
    del model
    torch.cuda.empty_cache()
    return np.stack(out)


def torch_logits(directory, ids, device):
    return model_logits(load_f32(directory), ids, device)


def f32_device():
    """The device transformers runs on, TF32 off: f32 means f32, so the comparison measures Helios."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return "cuda" if torch.cuda.is_available() else "cpu"


def compare(name, stage, helios, ref, tolerance, argmax_min=None):
    diff = np.abs(helios.astype(np.float64) - ref)
    agree = float((helios.argmax(-1) == ref.argmax(-1)).mean())
    ok = bool(np.isfinite(helios).all() and diff.max() <= tolerance and (argmax_min is None or agree >= argmax_min))
    return {"model": name, "stage": stage, "max_abs_diff": float(diff.max()), "mean_abs_diff": float(diff.mean()),
            "max_abs_logit": float(np.abs(ref).max()), "argmax_agreement": agree, "tolerance": tolerance,
            "argmax_min": argmax_min, "ok": ok}


def check_model(name, args, ids_path, ids, device):
    cls, values = CONFIGS[name]
    root = os.path.join(args.out, name)
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    torch.manual_seed(0)
    torch.set_default_dtype(torch.float32)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cls(**values))
    f32, bf16 = os.path.join(root, "f32"), os.path.join(root, "bf16")
    model.save_pretrained(f32, max_shard_size="1GB")  # sharded for the 1B model
    model.to(torch.bfloat16).save_pretrained(bf16)
    params = sum(p.numel() for p in model.parameters())
    del model
    torch.cuda.empty_cache()
    rows, timing = [], {}

    def helios_logits(source, precision, tag):
        out = os.path.join(root, f"helios-{tag}.npy")
        timing[tag] = run(["helios-train", "logits", *source, "--tokens", ids_path, "--out", out,
                           "--precision", precision], os.path.join(root, f"logits-{tag}.log"))
        return np.load(out)

    ref_f32 = torch_logits(f32, ids, device)
    rows.append(compare(name, "import f32", helios_logits(["--init-from", f32], "f32", "f32"), ref_f32,
                        F32_TOLERANCE))
    ref_bf16 = torch_logits(bf16, ids, device)
    rows.append(compare(name, "import bf16 file", helios_logits(["--init-from", bf16], "f32", "bf16-file"),
                        ref_bf16, F32_TOLERANCE))
    if args.precision != "f32":
        rows.append(compare(name, f"--precision {args.precision}",
                            helios_logits(["--init-from", bf16], args.precision, args.precision), ref_bf16,
                            LOW_TOLERANCE, LOW_ARGMAX))
    run_dir, export = os.path.join(root, "run"), os.path.join(root, "export")
    timing["train"] = run(["helios-train", "--init-from", f32, "--steps", str(args.steps), "--batch", "4",
                           "--seq-len", "256", "--lr", "1e-4", "--warmup", "2", "--eval-every", "0", "--keep", "1",
                           "--precision", args.train_precision, "--out", run_dir], os.path.join(root, "train.log"))
    timing["export"] = run(["helios-train", "export", "--format", "hf", "--run", run_dir, "--out", export,
                            "--max-shard-size", "1GB"], os.path.join(root, "export.log"))
    rows.append(compare(name, f"trained {args.steps} steps, exported",
                        helios_logits(["--resume", run_dir], "f32", "trained"), torch_logits(export, ids, device),
                        F32_TOLERANCE))
    with open(os.path.join(root, "train.log")) as f:
        trained = [line.strip() for line in f if line.startswith("done:")]
    shards = sorted(n for n in os.listdir(export) if n.endswith(".safetensors"))
    for r in rows:
        r["parameters"] = params
    return rows, {"model": name, "parameters": params, "seconds": timing, "train_summary": trained,
                  "export_files": shards}


def report(rows, info, path):
    """Prints the table of `rows`, writes them with `info` as JSON to `path`; exits 1 when a check failed."""
    print(f"\n{'model':<14} {'stage':<30} {'max|d|':>10} {'mean|d|':>10} {'max|logit|':>10} {'argmax':>7} "
          f"{'tol':>7} ok")
    for r in rows:
        if r["stage"] == "error":
            print(f"{r['model']:<14} ERROR {r['error']}")
            continue
        print(f"{r['model']:<14} {r['stage']:<30} {r['max_abs_diff']:>10.2e} {r['mean_abs_diff']:>10.2e} "
              f"{r['max_abs_logit']:>10.3f} {r['argmax_agreement']:>7.4f} {r['tolerance']:>7.0e} "
              f"{'yes' if r['ok'] else 'NO'}")
    result = dict(info, rows=rows, ok=bool(rows) and all(r["ok"] for r in rows))
    with open(path, "w") as f:
        json.dump(result, f, indent=2)
    print(f"wrote {path}: {'all checks passed' if result['ok'] else 'FAILED'}")
    sys.exit(0 if result["ok"] else 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--precision", default="f32", help="helios-train logits --precision for stage 3")
    ap.add_argument("--train-precision", default="f32")
    ap.add_argument("--models", default=",".join(CONFIGS))
    ap.add_argument("--out", default="/tmp/helios-hf-models")
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    device = f32_device()
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(1234)
    rows, runs = [], []
    for name in args.models.split(","):
        vocab = CONFIGS[name][1]["vocab_size"]
        ids = rng.integers(0, vocab, size=(4, 256), dtype=np.int32)
        ids_path = os.path.join(args.out, f"{name}-ids.npy")
        np.save(ids_path, ids)
        try:
            r, info = check_model(name, args, ids_path, ids, device)
        except Exception as e:  # one model's failure is reported, the others still run
            r, info = [{"model": name, "stage": "error", "error": str(e), "ok": False}], {"model": name}
        rows += r
        runs.append(info)
    report(rows, {"transformers": transformers.__version__, "torch": torch.__version__,
                  "device": torch.cuda.get_device_name() if device == "cuda" else device,
                  "precision": args.precision, "train_precision": args.train_precision, "runs": runs},
           os.path.join(args.out, "hf-models-check.json"))


if __name__ == "__main__":
    main()
