#!/usr/bin/env python3
"""The LoRA demo's held-out questions answered by transformers + PEFT, beside Helios' answers.

Loads the demo's exported Hugging Face base (AutoModelForCausalLM, f32, TF32 off) with its exported adapter
(PeftModel.from_pretrained), renders each held-out question with the tokenizer's own chat template
(apply_chat_template, the assistant's turn opened), and decodes greedily (generate, do_sample=False) until
the tokenizer's EOS (<|im_end|>) or --tokens new tokens. The answers are written as JSON lines in the form
`helios-train sample --prompts` prints them, scored with examples/lora-demo/evaluate.py, and compared with
Helios' answers (DEMO/answers.jsonl): generated ids and text, every disagreement listed.

    python3 bench/device/lora-demo-peft.py --demo DIR [--tokens 8] [--out DIR/peft.json]
The last line is the summary: agreement and both accuracies.
"""
import argparse
import json
import os
import subprocess
import sys

import peft
import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
EVALUATE = os.path.join(HERE, "..", "..", "examples", "lora-demo", "evaluate.py")


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_model(base, adapter, device):
    try:  # transformers 5 (and 4.56+) name the argument dtype, earlier ones torch_dtype
        model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    except TypeError:
        model = AutoModelForCausalLM.from_pretrained(base, torch_dtype=torch.float32)
    return peft.PeftModel.from_pretrained(model, adapter).to(device).eval()


def answer(model, tok, question, tokens, device):
    """{"prompt", "answer", "generated", "tokens", "stopped"} as helios-train sample --prompts writes it."""
    text = tok.apply_chat_template([{"role": "user", "content": question}], tokenize=False,
                                   add_generation_prompt=True)
    ids = tok(text, add_special_tokens=False, return_tensors="pt").input_ids.to(device)
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=tokens,
                             do_sample=False, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    new = out[0, ids.shape[1]:].tolist()
    stopped = bool(new) and new[-1] == tok.eos_token_id
    generated = new[:-1] if stopped else new
    return {"prompt": question, "answer": tok.decode(generated), "generated": generated,
            "tokens": len(generated), "stopped": stopped, "prompt_ids": ids[0].tolist()}


def accuracy(heldout, answers_path):
    r = subprocess.run([sys.executable, EVALUATE, "--heldout", heldout, "--answers", answers_path],
                       stdout=subprocess.PIPE, text=True, check=True)
    return r.stdout.strip().splitlines()[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--demo", required=True, help="a run-demo.sh directory (base-hf, adapter, answers.jsonl)")
    ap.add_argument("--tokens", type=int, default=8)
    ap.add_argument("--out", help="the comparison as JSON (default DEMO/peft.json)")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = "cuda" if torch.cuda.is_available() else "cpu"
    base, adapter = os.path.join(args.demo, "base-hf"), os.path.join(args.demo, "adapter")
    heldout = os.path.join(args.demo, "chats", "heldout.jsonl")
    tok = AutoTokenizer.from_pretrained(base)
    model = load_model(base, adapter, device)
    helios = {a["prompt"]: a for a in read_jsonl(os.path.join(args.demo, "answers.jsonl"))}
    mine = [answer(model, tok, q["messages"][0]["content"], args.tokens, device) for q in read_jsonl(heldout)]
    peft_answers = os.path.join(args.demo, "peft-answers.jsonl")
    with open(peft_answers, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(a) + "\n" for a in mine)
    disagree = []
    for a in mine:
        h = helios.get(a["prompt"])
        if h is None or h["generated"] != a["generated"] or h["stopped"] != a["stopped"]:
            disagree.append({"question": a["prompt"], "peft": a["answer"], "peft_ids": a["generated"],
                             "helios": h and h["answer"], "helios_ids": h and h["generated"],
                             "same_prompt_ids": bool(h) and h["prompt_ids"] == a["prompt_ids"]})
    result = {"transformers": transformers.__version__, "peft": peft.__version__, "torch": torch.__version__,
              "device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "questions": len(mine),
              "agree": len(mine) - len(disagree), "disagreements": disagree,
              "prompt_ids_agree": sum(1 for a in mine if a["prompt"] in helios
                                      and helios[a["prompt"]]["prompt_ids"] == a["prompt_ids"]),
              "helios_score": accuracy(heldout, os.path.join(args.demo, "answers.jsonl")),
              "peft_score": accuracy(heldout, peft_answers)}
    with open(args.out or os.path.join(args.demo, "peft.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    for d in disagree[:20]:
        print(f"disagree: {d['question']} helios {d['helios']!r} {d['helios_ids']}, "
              f"peft {d['peft']!r} {d['peft_ids']}")
    print(f"transformers {result['transformers']} + PEFT {result['peft']} agree with Helios on "
          f"{result['agree']} of {result['questions']} held-out answers (prompt ids {result['prompt_ids_agree']}); Helios {result['helios_score']}; "
          f"PEFT {result['peft_score']}")
    sys.exit(0 if not disagree else 1)


if __name__ == "__main__":
    main()
