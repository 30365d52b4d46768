#!/usr/bin/env python3
"""Writes the demo's chat set: questions of two-digit additions ("What is 47 + 38?" -> "85") as chat JSONL
({"messages": [user, assistant]}), split into train and held-out files with no question shared.

The split is by unordered pair: when {a, b} is held out, neither "a + b" nor "b + a" is trained on, so a
held-out answer cannot be recalled from its mirror image. Pairs are drawn from all of 10..99 x 10..99 by a
seeded shuffle; the same arguments write the same files.

  make_chats.py --out DIR [--train 3000] [--heldout 200] [--seed 1] [--addend N]
writes DIR/train.jsonl and DIR/heldout.jsonl.
"""
import argparse
import json
import os
import random

LOW, HIGH = 10, 99


def question(a, b):
    return f"What is {a} + {b}?"


def example(a, b):
    return {"messages": [{"role": "user", "content": question(a, b)},
                         {"role": "assistant", "content": str(a + b)}]}


def split(train, heldout, seed, addend=None):
    """(train questions, held-out questions) as (a, b) lists; no unordered pair in both. With `addend`, every
    question adds that number to a two-digit one (an easier task: one digit's successor and a carry)."""
    if addend is None:
        pairs = [(a, b) for a in range(LOW, HIGH + 1) for b in range(a, HIGH + 1)]
    else:
        pairs = [(a, addend) for a in range(LOW, HIGH + 1)]
    rng = random.Random(seed)
    rng.shuffle(pairs)
    held = pairs[:heldout] if addend is not None else [p if rng.random() < 0.5 else p[::-1] for p in pairs[:heldout]]
    ordered = [q for a, b in pairs[heldout:] for q in ({(a, b)} if addend is not None else {(a, b), (b, a)})]
    rng.shuffle(ordered)
    if len(held) < heldout or len(ordered) < train:
        raise SystemExit(f"make_chats.py: {train} + {heldout} questions need more than the "
                         f"{len(pairs)} pairs of {LOW}..{HIGH} allow")
    return ordered[:train], held


def write(path, questions):
    with open(path, "w", encoding="utf-8") as f:
        for a, b in questions:
            f.write(json.dumps(example(a, b)) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="directory for train.jsonl and heldout.jsonl")
    ap.add_argument("--train", type=int, default=3000, help="training questions (default 3000)")
    ap.add_argument("--heldout", type=int, default=200, help="held-out questions (default 200)")
    ap.add_argument("--seed", type=int, default=1, help="shuffle seed (default 1)")
    ap.add_argument("--addend", type=int, help="add this number to every question's two-digit one (e.g. 1) "
                    "instead of a second two-digit number")
    args = ap.parse_args()
    if args.train < 1 or args.heldout < 1:
        ap.error("--train and --heldout must be at least 1")
    train, held = split(args.train, args.heldout, args.seed, args.addend)
    os.makedirs(args.out, exist_ok=True)
    write(os.path.join(args.out, "train.jsonl"), train)
    write(os.path.join(args.out, "heldout.jsonl"), held)
    print(f"{args.out}: {len(train)} training and {len(held)} held-out questions (seed {args.seed})")


if __name__ == "__main__":
    main()
