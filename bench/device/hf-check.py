#!/usr/bin/env python3
"""Loads a `helios-train export --format hf` directory with transformers' GPT2LMHeadModel and compares its
logits with Helios' (written by the export's --reference-logits: helios_check_tokens.npy and
helios_check_logits.npy in the same directory). Prints one JSON object; exits 1 when the largest absolute
difference exceeds the tolerance (1e-3 by default).

    build/bin/helios-train export --format hf --run runs/gpt2 --out /tmp/hf-gpt2 --reference-logits 256
    python3 bench/device/hf-check.py /tmp/hf-gpt2 [--tolerance 1e-3] [--device cuda]
"""
import argparse
import json
import sys

import numpy as np
import torch
import transformers
from transformers import GPT2LMHeadModel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--tolerance", type=float, default=1e-3)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()

    tokens = np.load(f"{args.dir}/helios_check_tokens.npy").astype(np.int64)
    helios = np.load(f"{args.dir}/helios_check_logits.npy").astype(np.float64)
    # f32 on the GPU without TF32, so the comparison measures the export, not reduced-precision matmuls.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = GPT2LMHeadModel.from_pretrained(args.dir, torch_dtype=torch.float32).to(args.device).eval()
    with torch.no_grad():
        out = model(torch.from_numpy(tokens)[None].to(args.device)).logits[0].double().cpu().numpy()
    diff = np.abs(out - helios)
    result = {
        "dir": args.dir,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name() if args.device == "cuda" else args.device,
        "config": {k: model.config.to_dict()[k] for k in ("vocab_size", "n_positions", "n_embd", "n_layer",
                                                             "n_head")},
        "tokens": int(tokens.size),
        "max_abs_diff": float(diff.max()),
        "mean_abs_diff": float(diff.mean()),
        "max_abs_logit": float(np.abs(helios).max()),
        "argmax_agreement": float((out.argmax(-1) == helios.argmax(-1)).mean()),
        "tolerance": args.tolerance,
        "ok": bool(diff.max() <= args.tolerance),
    }
    print(json.dumps(result, indent=2))
    sys.exit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
