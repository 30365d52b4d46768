#!/usr/bin/env python3
"""Writes bench/RESULTS.md from bench/results/*.json: one section per results file, newest first.

Each section gives the file's device, driver, commit and date (from its "meta" object or its top level), its
notes, and every list of result rows it holds as a table (scalar columns only, long tables cut with a
pointer back to the file). Where anchor results exist (bench/merge_anchor.py: "benchmark": "anchor"), the
newest one comes first as a summary: each Helios GEMM and attention kernel beside the warp-level-MMA Triton
anchor, wgmma, cuBLAS/SDPA and the device's measured MMA peak. The JSON files are the record; this page is
only their rendering, so it is regenerated, never edited:
  python3 bench/results_md.py [--results DIR] [--out FILE] [--max-rows N] [--check]
--check writes nothing and fails (status 1) when FILE differs from what the results give.
The headline numbers (bench/headlines.py) open the page and are also written into README.md between its
HEADLINE markers; --check fails when README's copy differs as well.
"""
import argparse
import glob
import json
import os

import headlines

META_KEYS = ("device", "driver", "commit", "date", "torch", "mesa", "what")
NOTE_KEYS = ("note", "what")


def fmt(v):
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4g}"
    if v is None:
        return ""
    return str(v).replace("|", "/").replace("\n", " ")


def meta_of(doc):
    meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
    merged = {k: doc[k] for k in META_KEYS if k in doc and not isinstance(doc[k], (dict, list))}
    merged.update({k: v for k, v in meta.items() if k in META_KEYS and not isinstance(v, (dict, list))})
    return merged


def row_lists(node, path=""):
    """(path, rows) for every list of objects under node, depth first."""
    if isinstance(node, list):
        if node and all(isinstance(x, dict) for x in node):
            yield path or "results", node
            return
        for i, x in enumerate(node):
            yield from row_lists(x, f"{path}[{i}]")
    elif isinstance(node, dict):
        for k, v in node.items():
            if k == "meta":
                continue
            yield from row_lists(v, f"{path}.{k}" if path else k)


def table(rows, max_rows, max_cols=14):
    cols = []
    for r in rows:
        for k, v in r.items():
            if k not in cols and not isinstance(v, (dict, list)):
                cols.append(k)
    cols = cols[:max_cols]
    if not cols:
        return []
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows[:max_rows]:
        out.append("| " + " | ".join(fmt(r.get(c)) for c in cols) + " |")
    if len(rows) > max_rows:
        out.append(f"\n({len(rows) - max_rows} more rows in the file)")
    return out


def section(path, max_rows):
    name = os.path.basename(path)
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        return [f"## {name}", "", f"(unreadable: {e})", ""]
    lines = [f"## {name}", ""]
    if isinstance(doc, dict):
        meta = meta_of(doc)
        if meta:
            lines += ["; ".join(f"{k}: {fmt(v)}" for k, v in meta.items()), ""]
        for k in NOTE_KEYS:
            if isinstance(doc.get(k), str) and k not in meta:
                lines += [doc[k], ""]
    for label, rows in row_lists(doc):
        body = table(rows, max_rows)
        if body:
            lines += [f"**{label}**", ""] + body + [""]
    return lines


def num(v, spec):
    return format(v, spec) if isinstance(v, (int, float)) and not isinstance(v, bool) else ""


def newest_anchor(files):
    """(path, document) of the newest anchor result among `files` (newest first), or None."""
    for path in files:
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and doc.get("benchmark") == "anchor":
            return path, doc
    return None


def anchor_summary(path, doc):
    """The reachable-limit table: every GEMM and attention row of the newest anchor file."""
    peak = doc.get("peak", {})
    meta = doc.get("meta", {})
    lines = ["## Helios against the reachable limit", "",
             f"From [{os.path.basename(path)}](#{anchor(path)}) ({fmt(meta.get('device'))}, "
             f"{fmt(meta.get('driver'))}, commit {fmt(meta.get('commit'))}): each kernel beside the Triton anchor "
             "on warp-level MMA (what cooperative matrices compile to), Triton on wgmma, cuBLAS or SDPA, and the "
             f"device's measured f16 -> f32 MMA peak of {num(peak.get('f16_f32_tflops'), '.1f')} TFLOP/s "
             f"(`helios-bench peak`; memory {num(peak.get('bandwidth_gbps'), '.0f')} GB/s). "
             "Fraction of anchor: Helios' throughput over the warp-MMA anchor's (1.0 is parity).", "",
             "| GEMM (f16 -> f32) | layout | Helios TFLOP/s | warp-MMA anchor | fraction of anchor | wgmma | "
             "cuBLAS | fraction of measured MMA peak |",
             "|---|---|---|---|---|---|---|---|"]
    for r in doc.get("gemm", []):
        lines.append(f"| {r['M']}x{r['N']}x{r['K']} | {r['layout']} | {num(r.get('helios_tflops'), '.1f')} | "
                     f"{num(r.get('anchor_v2_tflops'), '.1f')} | {num(r.get('fraction_of_anchor'), '.2f')} | "
                     f"{num(r.get('anchor_v3_tflops'), '.1f')} | {num(r.get('cublas_tflops'), '.1f')} | "
                     f"{num(r.get('fraction_of_peak'), '.2f')} |")
    lines += ["", "| attention (f16) | mode | Helios us | warp-MMA anchor us | fraction of anchor | wgmma us | "
              "SDPA us | fraction of measured MMA peak |", "|---|---|---|---|---|---|---|---|"]
    for r in doc.get("attention", []):
        shape = (f"B{r['B']} H{r['H']}" + (f" Hkv{r['Hkv']}" if r.get("Hkv", r["H"]) != r["H"] else "") +
                 f" S{r['S']} D{r['D']} {'causal' if r['causal'] else 'dense'}")
        lines.append(f"| {shape} | {r['mode']} | {num(r.get('helios_us'), '.1f')} | "
                     f"{num(r.get('anchor_v2_us'), '.1f')} | {num(r.get('fraction_of_anchor'), '.2f')} | "
                     f"{num(r.get('anchor_v3_us'), '.1f')} | {num(r.get('sdpa_us'), '.1f')} | "
                     f"{num(r.get('fraction_of_peak'), '.2f')} |")
    return lines + [""]


def render(results, max_rows, headline_rows=headlines.ROWS):
    files = sorted(glob.glob(os.path.join(results, "*.json")), reverse=True)
    logs = sorted(glob.glob(os.path.join(results, "*.txt")), reverse=True)
    lines = ["# Benchmark results", "",
             "Generated by `bench/results_md.py` from `bench/results/*.json` (newest first); do not edit by hand.",
             "Every file records the device, driver and commit it was measured on; GPU numbers beside PyTorch come",
             "from the same device call, both sides timed at sustained clocks unless the file's note says otherwise.",
             ""]
    if headline_rows:
        lines += ["## Headline numbers", "", "The numbers README.md quotes (bench/headlines.py: which rows of which "
                  "file).", ""] + headlines.render(results, headline_rows) + [""]
    newest = newest_anchor(files)
    if newest:
        lines += anchor_summary(*newest)
    lines += ["## Contents", ""] + [f"- [{os.path.basename(f)}](#{anchor(f)})" for f in files] + [""]
    for f in files:
        lines += section(f, max_rows)
    if logs:
        lines += ["## Raw logs", ""] + [f"- `results/{os.path.basename(f)}`" for f in logs] + [""]
    return "\n".join(lines), len(files), len(logs)


def main():
    root = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", default=os.path.join(root, "results"))
    p.add_argument("--out", default=os.path.join(root, "RESULTS.md"))
    p.add_argument("--max-rows", type=int, default=40)
    p.add_argument("--readme", default=os.path.join(os.path.dirname(root), "README.md"))
    p.add_argument("--no-headlines", action="store_true",
                   help="leave the headline numbers and README out (a results directory other than bench/results)")
    p.add_argument("--check", action="store_true",
                   help="compare --out and --readme with the rendering instead of writing")
    args = p.parse_args()
    rows = [] if args.no_headlines else headlines.ROWS
    text, files, logs = render(args.results, args.max_rows, rows)
    readme = read(args.readme)
    new_readme = headlines.splice(readme, headlines.render(args.results, rows)) if rows else readme
    if new_readme is None:
        print(f"{args.readme} has no {headlines.BEGIN} ... {headlines.END} block for the headline numbers")
        raise SystemExit(1)
    if args.check:
        stale = [path for path, now, want in ((args.out, read(args.out), text), (args.readme, readme, new_readme))
                 if now != want]
        if stale:
            print(f"{' and '.join(stale)} not what {args.results} gives: run python3 bench/results_md.py")
            raise SystemExit(1)
        print(f"{args.out} and the headline numbers of {args.readme} are in step with {files} result files and "
              f"{logs} logs")
        return
    for path, content in ((args.out, text), (args.readme, new_readme)):
        with open(path, "w") as f:
            f.write(content)
    print(f"wrote {args.out} ({files} result files, {logs} logs) and the headline numbers of {args.readme}")


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        return f"(unreadable: {e})"


def anchor(path):
    return os.path.basename(path).lower().replace(".", "")


if __name__ == "__main__":
    main()
