#!/usr/bin/env python3
"""How far PyTorch's own bf16 forward strays from f32, measured as hf-models-check.py measures Helios'.

For each model of hf-models-check.py (the same random weights: seed 0, the same configs; the same token ids:
numpy seed 1234 drawn in --models order), the weights are rounded to bf16 (what the "import bf16 file" stage
reads), and three forwards are compared against the f32 forward of those weights (TF32 off): the model in
bf16 (every parameter and activation bf16, as transformers runs a bf16 checkpoint), and f32 weights under
torch.autocast(bfloat16). Prints hf-models-check's table and writes --json.
    python3 bench/device/torch-bf16-error.py [--models llama-3.2-1b,qwen2.5-0.5b,smollm2-135m] [--json F]
"""
import argparse
import importlib.util
import json
import os

import numpy as np
import torch
from transformers import AutoModelForCausalLM

_spec = importlib.util.spec_from_file_location(
    "hf_models_check", os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf-models-check.py"))
hf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hf)


def logits(model, ids, autocast):
    out = []
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
        for row in ids:
            out.append(model(torch.from_numpy(row[None].astype(np.int64)).cuda()).logits[0].double().cpu().numpy())
    return np.stack(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="llama-3.2-1b,qwen2.5-0.5b,smollm2-135m")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rng = np.random.default_rng(1234)
    rows = []
    for name in args.models.split(","):
        cls, values = hf.CONFIGS[name]
        ids = rng.integers(0, values["vocab_size"], size=(4, 256), dtype=np.int32)
        torch.manual_seed(0)
        torch.set_default_dtype(torch.float32)
        with torch.device("cuda"):
            model = AutoModelForCausalLM.from_config(cls(**values))
        model = model.to(torch.bfloat16).to(torch.float32).eval()  # the bf16 file's weights, held in f32
        ref = logits(model, ids, autocast=False)
        rows.append(hf.compare(name, "torch autocast bf16", logits(model, ids, autocast=True), ref,
                               hf.LOW_TOLERANCE, hf.LOW_ARGMAX))
        model = model.to(torch.bfloat16)
        rows.append(hf.compare(name, "torch bf16 model", logits(model, ids, autocast=False), ref,
                               hf.LOW_TOLERANCE, hf.LOW_ARGMAX))
        del model
        torch.cuda.empty_cache()
    for r in rows:
        print(f"{r['model']:<14} {r['stage']:<22} max|d| {r['max_abs_diff']:.2e} mean|d| {r['mean_abs_diff']:.2e} "
              f"max|logit| {r['max_abs_logit']:.3f} argmax {r['argmax_agreement']:.4f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
