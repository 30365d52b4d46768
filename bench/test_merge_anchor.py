#!/usr/bin/env python3
"""Tests of bench/merge_anchor.py and of results_md.py's anchor summary and --check, on synthetic inputs
shaped like helios-bench, triton_anchor.py, gemm.py and attention.py output (ctest: bench/merge-anchor)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import merge_anchor  # noqa: E402
import results_md  # noqa: E402

PEAK = {"benchmark": "peak", "device": "GPU X", "driver": "drv 1", "commit": "abc", "date": "2026-11-30",
        "results": [
            {"A": "float16", "C": "float32", "ok": True, "tflops": 500.0, "kernel": "peak_mma_16x16x16_f16_f32_sg_4x4"},
            {"A": "float16", "C": "float32", "ok": False, "tflops": 900.0, "kernel": "wrong"},
            {"A": "float16", "C": "float16", "ok": True, "tflops": 800.0, "kernel": "f16 accumulators"},
            {"A": "float16", "C": "float32", "skip": "scope"}],
        "bandwidth": [{"ok": True, "gbps": 4000.0, "bytes_per_buffer": 1 << 28}]}
HELIOS_GEMM = {"device": "GPU X", "driver": "drv 1", "commit": "abc", "date": "2026-11-30", "dtype": "f16",
               "out": "f32", "results": [
                   {"M": 1024, "N": 1024, "K": 1024, "layout": "nn", "tflops": 300.0, "ok": True,
                    "kernel_name": "gemm_coop"},
                   {"M": 1024, "N": 1024, "K": 1024, "layout": "tn", "tflops": 999.0, "ok": False},
                   {"M": 512, "N": 512, "K": 512, "layout": "nt", "error": "boom"}]}
HELIOS_ATTENTION = {"device": "GPU X", "results": [
    {"B": 8, "H": 14, "Hkv": 2, "S": 1024, "D": 64, "causal": True, "mode": "fwd", "us": 100.0, "tflops": 200.0,
     "ok": True},
    {"B": 16, "H": 12, "S": 1024, "D": 64, "causal": False, "mode": "fwdbwd", "us": 300.0, "tflops": 150.0,
     "ok": True}]}
ANCHOR_V2 = {"mma": "v2", "mma_instructions": ["mma.sync"], "triton": "3.6", "torch": "2.11", "results": [
    {"kind": "gemm", "M": 1024, "N": 1024, "K": 1024, "layout": "nn", "dtype": "f16", "out": "f32", "tflops": 400.0},
    {"kind": "gemm", "M": 1024, "N": 1024, "K": 1024, "layout": "nn", "dtype": "f16", "out": "in", "tflops": 1.0},
    {"kind": "gemm", "M": 1024, "N": 1024, "K": 1024, "layout": "nn", "dtype": "bf16", "out": "f32", "tflops": 2.0},
    {"kind": "attention", "B": 8, "H": 14, "Hkv": 2, "S": 1024, "D": 64, "causal": True, "mode": "fwd",
     "dtype": "f16", "ms": 0.08, "tflops": 250.0},
    {"kind": "attention", "B": 16, "H": 12, "Hkv": 12, "S": 1024, "D": 64, "causal": False, "mode": "fwdbwd",
     "dtype": "f16", "ms": 0.45, "tflops": 100.0}]}
ANCHOR_V3 = {"mma": "v3", "mma_instructions": ["wgmma"], "results": [
    {"kind": "gemm", "M": 1024, "N": 1024, "K": 1024, "layout": "nn", "dtype": "f16", "out": "f32", "tflops": 600.0}]}
TORCH_GEMM = {"torch": "2.11", "results": [
    {"M": 1024, "N": 1024, "K": 1024, "layout": "nn", "dtype": "f16", "out": "f16", "tflops": 650.0, "ms": 1},
    {"M": 1024, "N": 1024, "K": 1024, "layout": "nn", "dtype": "f16", "out": "f32", "tflops": 700.0, "ms": 1}]}
TORCH_ATTENTION = {"torch": "2.11", "results": [
    {"B": 8, "H": 14, "Hkv": 2, "S": 1024, "D": 64, "causal": True, "mode": "fwd", "dtype": "f16", "ms": 0.05},
    {"B": 8, "H": 14, "Hkv": 2, "S": 1024, "D": 64, "causal": True, "mode": "fwd", "dtype": "f32", "ms": 5.0}]}


def merged(v3=True):
    return merge_anchor.merge(PEAK, [HELIOS_GEMM], [HELIOS_ATTENTION], [ANCHOR_V2], [ANCHOR_V3] if v3 else [],
                              [TORCH_GEMM], [TORCH_ATTENTION], "synthetic")


class MergeAnchor(unittest.TestCase):
    def test_peak_is_the_fastest_correct_f16_f32_row(self):
        doc = merged()
        self.assertEqual(doc["peak"]["f16_f32_tflops"], 500.0)
        self.assertEqual(doc["peak"]["f16_f32_kernel"], "peak_mma_16x16x16_f16_f32_sg_4x4")
        self.assertEqual(doc["peak"]["bandwidth_gbps"], 4000.0)
        self.assertEqual(doc["meta"]["commit"], "abc")
        self.assertEqual(doc["benchmark"], "anchor")
        self.assertEqual(doc["mma_instructions"], {"v2": ["mma.sync"], "v3": ["wgmma"]})

    def test_gemm_rows_match_shape_layout_and_output_type(self):
        rows = merged()["gemm"]
        self.assertEqual(len(rows), 1)  # the wrong and the failed Helios rows are left out
        r = rows[0]
        self.assertEqual((r["M"], r["layout"], r["out"]), (1024, "nn", "f32"))
        self.assertEqual(r["anchor_v2_tflops"], 400.0)  # not the "in" or bf16 rows
        self.assertEqual(r["anchor_v3_tflops"], 600.0)
        self.assertEqual(r["cublas_tflops"], 700.0)  # f32 output, as Helios'
        self.assertAlmostEqual(r["fraction_of_anchor"], 0.75)
        self.assertAlmostEqual(r["fraction_of_peak"], 0.6)

    def test_attention_rows_match_gqa_shapes_and_invert_times(self):
        rows = merged()["attention"]
        gqa = next(r for r in rows if r["Hkv"] == 2)
        self.assertAlmostEqual(gqa["anchor_v2_us"], 80.0)
        self.assertAlmostEqual(gqa["sdpa_us"], 50.0)  # the f16 row, not f32
        self.assertAlmostEqual(gqa["fraction_of_anchor"], 0.8)
        self.assertAlmostEqual(gqa["fraction_of_peak"], 0.4)
        dense = next(r for r in rows if r["Hkv"] == 12)  # Hkv defaults to H on Helios' side
        self.assertAlmostEqual(dense["fraction_of_anchor"], 1.5)
        self.assertIsNone(dense["sdpa_us"])

    def test_missing_sides_leave_empty_columns(self):
        doc = merged(v3=False)
        self.assertIsNone(doc["gemm"][0]["anchor_v3_tflops"])
        lines = merge_anchor.table_lines(doc)
        self.assertIn("500.0 TFLOP/s", lines[0])
        self.assertTrue(any(line.startswith("1024x1024x1024") and " - " in line for line in lines))

    def test_cli_writes_json_and_prints_the_table_last(self):
        with tempfile.TemporaryDirectory() as d:
            paths = {}
            for name, doc in (("peak", PEAK), ("hg", HELIOS_GEMM), ("ha", HELIOS_ATTENTION), ("v2", ANCHOR_V2),
                              ("v3", ANCHOR_V3), ("tg", TORCH_GEMM), ("ta", TORCH_ATTENTION)):
                paths[name] = os.path.join(d, name + ".json")
                with open(paths[name], "w") as f:
                    json.dump(doc, f)
            out = os.path.join(d, "anchor.json")
            run = subprocess.run([sys.executable, os.path.join(HERE, "merge_anchor.py"), "--peak", paths["peak"],
                                  "--helios-gemm", paths["hg"], "--helios-attention", paths["ha"],
                                  "--anchor-v2", paths["v2"], "--anchor-v3", paths["v3"], "--torch-gemm",
                                  paths["tg"], "--torch-attention", paths["ta"], "--out", out],
                                 capture_output=True, text=True, check=True)
            self.assertIn("B8 H14/2 S1024 D64 causal", run.stdout.strip().splitlines()[-2])
            with open(out) as f:
                self.assertEqual(json.load(f)["gemm"][0]["fraction_of_anchor"], 0.75)


class ResultsPage(unittest.TestCase):
    def test_anchor_summary_comes_first_and_check_follows_the_files(self):
        with tempfile.TemporaryDirectory() as d:
            results = os.path.join(d, "results")
            os.mkdir(results)
            with open(os.path.join(results, "2026-11-30-gpu-anchor.json"), "w") as f:
                json.dump(merged(), f)
            with open(os.path.join(results, "2026-11-29-gpu-gemm.json"), "w") as f:
                json.dump(HELIOS_GEMM, f)
            text, files, _ = results_md.render(results, 40, [])
            self.assertEqual(files, 2)
            summary = text.index("## Helios against the reachable limit")
            self.assertLess(summary, text.index("## Contents"))
            self.assertIn("| 1024x1024x1024 | nn | 300.0 | 400.0 | 0.75 | 600.0 | 700.0 | 0.60 |", text)
            self.assertIn("| B8 H14 Hkv2 S1024 D64 causal | fwd | 100.0 | 80.0 | 0.80 |", text)
            self.assertIn("measured f16 -> f32 MMA peak of 500.0 TFLOP/s", text)
            page = os.path.join(d, "RESULTS.md")
            script = [sys.executable, os.path.join(HERE, "results_md.py"), "--results", results, "--out", page,
                      "--no-headlines"]
            self.assertEqual(subprocess.run(script + ["--check"], capture_output=True).returncode, 1)  # no page
            subprocess.run(script, check=True, capture_output=True)
            self.assertEqual(subprocess.run(script + ["--check"], capture_output=True).returncode, 0)
            with open(os.path.join(results, "2026-12-01-gpu-new.json"), "w") as f:
                json.dump({"results": [{"x": 1}]}, f)
            self.assertEqual(subprocess.run(script + ["--check"], capture_output=True).returncode, 1)

    def test_no_anchor_file_no_summary(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "a.json"), "w") as f:
                json.dump(HELIOS_GEMM, f)
            text, _, _ = results_md.render(d, 40, [])
            self.assertNotIn("reachable limit", text)


if __name__ == "__main__":
    unittest.main()
