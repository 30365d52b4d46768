#!/usr/bin/env python3
"""Renders a text corpus as numbered ChatML turns, the demo's pretraining text.

LoRA trains adapters on the attention and MLP projections; the embeddings and the (tied) output head stay as
pretraining left them. A model can then only be taught to answer with tokens it has learned to produce: a
byte-level model pretrained on the plain default corpus (the King James Bible, which has no digits) has never
produced a digit or <|im_end|>, and its LoRA run's loss stalls on the answer's tokens. Real base models have
seen both, so the demo's pretraining text is the corpus with each line as one exchange, its number asked and
repeated:

  <|im_start|>user\\nLine 1234<|im_end|>\\n<|im_start|>assistant\\n1234 {the line}<|im_end|>\\n

No arithmetic is in it: adding is what the adapters learn.

  make_corpus.py --corpus kjv.txt --out pretrain.txt
"""
import argparse


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True, help="a UTF-8 text file, one passage per line")
    ap.add_argument("--out", required=True, help="the text file to write")
    args = ap.parse_args()
    n = 0
    with open(args.corpus, encoding="utf-8") as src, open(args.out, "w", encoding="utf-8") as out:
        for line in src:
            text = line.strip()
            if not text:
                continue
            n += 1
            out.write(f"<|im_start|>user\nLine {n}<|im_end|>\n<|im_start|>assistant\n{n} {text}<|im_end|>\n")
    print(f"{args.out}: {n} lines of {args.corpus} as ChatML turns")


if __name__ == "__main__":
    main()
