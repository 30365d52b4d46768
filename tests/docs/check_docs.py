#!/usr/bin/env python3
"""Checks README.md, docs/*.md and bench/notes/*.md against the tree they describe.

  check_docs.py paths     every repository path the pages name exists (a path without an extension may name
                          a file stem, as `engine/ops/softmax` names softmax.hpp and softmax.cpp), and every
                          results file they name (`2026-11-25-h100-gemm-final.json`) is in bench/results
  check_docs.py numbers   README and docs/ quote no measurement outside README's generated headline table
                          (bench/headlines.py): no time, throughput, clock, power or speed-up written as a
                          number with its unit, and no before -> after pair; they name the data file instead
  check_docs.py size      docs/ARCHITECTURE.md stays under 250 lines: structure and decisions, the stories in notes
  check_docs.py notes     each bench/notes/*.md names at least one results file that exists, and every number
                          in its prose is one its results files hold (at the note's rounding), so a note
                          quotes its data and derives nothing

Code blocks and code spans are commands, flags and identifiers, not quotes, so `numbers` skips them.
--root DIR checks another tree (the tests' own fixtures use it).
"""
import argparse
import glob
import os
import re
import sys

TOP = ("api", "bench", "cmake", "codegen", "docs", "engine", "examples", "include", "probe", "python", "shaders",
       "tests", "third_party", "tools", ".ci")
RESULT_FILE = re.compile(r"\b(20\d\d-\d\d-\d\d-[A-Za-z0-9.+_-]+\.(?:json|txt))\b")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
NUMBER = r"\d+(?:[.,]\d+)?[KM]?"
NOTE_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w])")
DATA_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
MEASUREMENT = re.compile(
    rf"{NUMBER}\s*(?:µs|us|ms|ns|s|seconds|minutes|min|hours|h)\b"
    rf"|{NUMBER}\s*(?:[TGM]FLOP/s|tokens/s|tok/s|[GMT]B/s|GiB/s|MHz|GHz|kW|W)(?![A-Za-z])"
    rf"|{NUMBER}(?:-{NUMBER})?[x×](?![A-Za-z0-9])"
    rf"|{NUMBER}\s*%\s+(?:faster|slower|fewer|more|less)"
    rf"|{NUMBER}\s*(?:->|→)\s*{NUMBER}")


def pages(root, pattern):
    return sorted(glob.glob(os.path.join(root, pattern)))


def prose(text):
    """`text` without fenced code blocks, code spans and the generated headline block, line by line."""
    out, fenced, generated = [], False, False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            line = ""
        if "<!-- HEADLINE" in line:
            generated = True
        if "<!-- /HEADLINE" in line:
            generated, line = False, ""
        out.append("" if fenced or generated else CODE_SPAN.sub("``", line))
    return out


def candidate_paths(text):
    """Repository paths a page names: code spans and link targets whose first part is a top-level folder."""
    for token in CODE_SPAN.findall(text) + LINK.findall(text):
        for word in re.split(r"[\s,;()]+", token):
            word = word.rstrip(".:'\"").lstrip("'\"").removeprefix("./")
            if word.split("/")[0] in TOP and "/" in word and not re.search(r"[<>*{}$]|\.\.\.", word):
                yield word


def exists(root, path):
    full = os.path.join(root, path.rstrip("/"))
    return os.path.exists(full) or bool(glob.glob(glob.escape(full) + ".*"))


def check_paths(root, files):
    errors = []
    for page in files:
        text = open(page, encoding="utf-8").read()
        rel = os.path.relpath(page, root)
        for path in sorted(set(candidate_paths(text))):
            if not exists(root, path):
                errors.append(f"{rel}: names {path}, which does not exist")
        for name in sorted(set(RESULT_FILE.findall(text))):
            if not os.path.exists(os.path.join(root, "bench", "results", name)):
                errors.append(f"{rel}: names the results file {name}, which is not in bench/results")
    return errors


def check_numbers(root, files):
    errors = []
    for page in files:
        rel = os.path.relpath(page, root)
        for number, line in enumerate(prose(open(page, encoding="utf-8").read()), 1):
            for m in MEASUREMENT.finditer(line):
                errors.append(f"{rel}:{number}: '{m.group(0)}' reads as a measurement: quote it from "
                              "bench/RESULTS.md's headline table (bench/headlines.py) or name its data file")
    return errors


def held_numbers(paths):
    """Every number in the files at 0 to 3 decimals, as text: what a note may quote from them."""
    held = set()
    for path in paths:
        for m in DATA_NUMBER.findall(open(path, encoding="utf-8").read()):
            held.update(f"{float(m):.{d}f}" for d in range(4))
    return held


def check_notes(root, files):
    errors = []
    for page in files:
        text, rel = open(page, encoding="utf-8").read(), os.path.relpath(page, root)
        data = [p for p in (os.path.join(root, "bench", "results", n) for n in RESULT_FILE.findall(text))
                if os.path.exists(p)]
        if not data:
            errors.append(f"{rel}: names no results file of bench/results")
            continue
        held = held_numbers(data)
        for line_no, line in enumerate(prose(text), 1):
            for n in NOTE_NUMBER.findall(RESULT_FILE.sub("", line)):
                if n not in held:
                    errors.append(f"{rel}:{line_no}: {n} is in none of the results files the note names")
    return errors


ARCHITECTURE_LINES = 250


def check_size(root):
    path = os.path.join(root, "docs", "ARCHITECTURE.md")
    lines = open(path, encoding="utf-8").read().count("\n")
    if lines >= ARCHITECTURE_LINES:
        return [f"docs/ARCHITECTURE.md has {lines} lines (under {ARCHITECTURE_LINES}: move measurement stories to "
                "bench/notes)"]
    return []


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("check", choices=("paths", "numbers", "notes", "size"))
    p.add_argument("--root", default=os.path.dirname(os.path.dirname(here)))
    args = p.parse_args()
    docs = [os.path.join(args.root, "README.md")] + pages(args.root, "docs/*.md")
    notes = pages(args.root, "bench/notes/*.md")
    if args.check == "paths":
        files, errors = docs + notes, check_paths(args.root, docs + notes)
    elif args.check == "size":
        files, errors = [os.path.join(args.root, "docs", "ARCHITECTURE.md")], check_size(args.root)
    elif args.check == "numbers":
        files, errors = docs, check_numbers(args.root, docs)
    else:
        files, errors = notes, check_notes(args.root, notes)
        if not notes:
            errors = ["bench/notes holds no notes"]
    for e in errors:
        print(e)
    print(f"{args.check}: {len(files)} pages, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
