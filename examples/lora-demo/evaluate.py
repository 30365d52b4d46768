#!/usr/bin/env python3
"""Scores a chat model on held-out questions: each question's answer must equal the expected one exactly
(surrounding whitespace aside) and end the turn by itself.

The answers come from Helios (`helios-train sample --chat --prompts ... --temperature 0`: greedy, one model
load for every question, each answer stopped at the end of its turn), or from a file of answers another
program wrote (--answers: JSON lines with "prompt" and "answer", as sample --prompts prints them; this is how
transformers + PEFT's answers are scored and compared in bench/device/lora-demo.sh).

  evaluate.py --heldout heldout.jsonl --run RUN [--helios build/bin/helios-train] [--device SEL]
  evaluate.py --heldout heldout.jsonl --answers answers.jsonl
  options: --tokens 8, --answers-out FILE (the answers as JSON lines), --report FILE (the score as JSON),
           --min-accuracy X (exit status 1 below X, e.g. 0.9)
The last line printed is the summary: "accuracy 0.935 (187 of 200 exact)".
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def question_and_answer(example):
    """(the last user turn, the assistant's reply to it) of a {"messages": [...]} example."""
    msgs = example["messages"]
    users = [i for i, m in enumerate(msgs) if m["role"] == "user"]
    if not users or users[-1] + 1 >= len(msgs) or msgs[users[-1] + 1]["role"] != "assistant":
        raise ValueError(f"no user turn followed by the assistant's answer: {example}")
    return msgs[users[-1]]["content"], msgs[users[-1] + 1]["content"]


def score(expected, answers):
    """expected: [(question, answer)]; answers: {question: {"answer": str, "stopped": bool}}.
    Returns the report: accuracy and every miss (a question without an answer counts as wrong)."""
    misses = []
    for q, want in expected:
        got = answers.get(q)
        text = got["answer"] if got else None
        ok = got is not None and got.get("stopped", True) and text.strip() == want.strip()
        if not ok:
            misses.append({"question": q, "expected": want, "answer": text,
                           "stopped": got.get("stopped") if got else None})
    n = len(expected)
    return {"questions": n, "exact": n - len(misses), "accuracy": (n - len(misses)) / n if n else 0.0,
            "misses": misses}


def helios_answers(args, questions):
    """Runs helios-train sample --chat --prompts on the questions; returns its JSON lines."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        for q in questions:
            f.write(json.dumps({"prompt": q}) + "\n")
        prompts = f.name
    try:
        cmd = [args.helios, "sample", "--resume", args.run, "--chat", "--prompts", prompts, "--temperature", "0",
               "--tokens", str(args.tokens)]
        if args.device:
            cmd += ["--device", args.device]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            sys.exit(f"evaluate.py: {' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
        sys.stderr.write(proc.stderr)
        return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    finally:
        os.unlink(prompts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heldout", required=True, help="chat JSONL of the held-out questions and answers")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--run", help="a Helios run directory (LoRA or full) to answer with")
    src.add_argument("--answers", help="JSON lines with prompt and answer, from another program")
    ap.add_argument("--helios", default="build/bin/helios-train", help="the helios-train binary")
    ap.add_argument("--device", help="helios-train's --device")
    ap.add_argument("--tokens", type=int, default=8, help="most tokens an answer may take (default 8)")
    ap.add_argument("--answers-out", help="write the answers as JSON lines")
    ap.add_argument("--report", help="write the score (and every miss) as JSON")
    ap.add_argument("--min-accuracy", type=float, help="exit status 1 when the accuracy is below this")
    args = ap.parse_args()

    expected = [question_and_answer(e) for e in read_jsonl(args.heldout)]
    lines = read_jsonl(args.answers) if args.answers else helios_answers(args, [q for q, _ in expected])
    answers = {line["prompt"]: line for line in lines}
    report = score(expected, answers)
    if args.answers_out:
        with open(args.answers_out, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(line) + "\n" for line in lines)
    if args.report:
        with open(args.report, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    for m in report["misses"][:10]:
        print(f"miss: {m['question']} expected {m['expected']!r}, answered {m['answer']!r}")
    print(f"accuracy {report['accuracy']:.3f} ({report['exact']} of {report['questions']} exact)")
    if args.min_accuracy is not None and report["accuracy"] < args.min_accuracy:
        sys.exit(1)


if __name__ == "__main__":
    main()
