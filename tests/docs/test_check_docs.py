#!/usr/bin/env python3
"""Tests of tests/docs/check_docs.py on a small made-up tree (ctest: docs/checker): each check passes on
pages that keep the rules and fails, naming page and line, on one that breaks each."""
import os
import subprocess
import sys
import tempfile
import unittest

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_docs.py")
GOOD = """# Page
The op lives in `engine/ops/softmax` (see [the test](tests/ops/test_softmax.cpp)); measured in
`2026-11-25-h100-gemm-final.json`; `./tools/run.sh`, `.ci/run`.
A 16 x 16 grid of 64x64 tiles, `--warmup-ms 300`, run `helios-bench`.
```sh
build/bin/helios-bench gemm   # 310 TFLOP/s here would be a code block, not a quote
```
<!-- HEADLINE: generated -->
| 716 µs | 0.81x |
<!-- /HEADLINE -->
"""


class CheckDocs(unittest.TestCase):
    def tree(self, d, readme, note="From `2026-11-25-h100-gemm-final.json`: 17.6 TFLOP/s, 709.7 us, 710.\n"):
        for path in ("engine/ops/softmax.hpp", "tests/ops/test_softmax.cpp",
                     "bench/results/2026-11-25-h100-gemm-final.json", "docs/ARCHITECTURE.md", "tools/run.sh", ".ci/run"):
            os.makedirs(os.path.join(d, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(d, path), "w") as f:
                f.write('{"tflops": 17.6123, "us": 709.728}' if path.endswith(".json") else "")
        with open(os.path.join(d, "README.md"), "w") as f:
            f.write(readme)
        os.makedirs(os.path.join(d, "bench/notes"), exist_ok=True)
        with open(os.path.join(d, "bench/notes/a.md"), "w") as f:
            f.write(note)

    def run_check(self, d, check):
        return subprocess.run([sys.executable, CHECK, check, "--root", d], capture_output=True, text=True)

    def test_good_pages_pass(self):
        with tempfile.TemporaryDirectory() as d:
            self.tree(d, GOOD)
            for check in ("paths", "numbers", "notes", "size"):
                self.assertEqual(self.run_check(d, check).returncode, 0, check)

    def test_a_long_architecture_page_fails(self):
        with tempfile.TemporaryDirectory() as d:
            self.tree(d, GOOD)
            with open(os.path.join(d, "docs/ARCHITECTURE.md"), "w") as f:
                f.write("a line\n" * 250)
            self.assertEqual(self.run_check(d, "size").returncode, 1)

    def test_a_missing_path_or_results_file_fails(self):
        for bad in ("`engine/ops/softmax_gone`", "`.ci/gone`", "[x](codegen/kernels/nothing.cpp)",
                    "`2026-01-01-none.json`"):
            with tempfile.TemporaryDirectory() as d:
                self.tree(d, GOOD + bad + "\n")
                run = self.run_check(d, "paths")
                self.assertEqual(run.returncode, 1, bad)
                self.assertIn("README.md: names", run.stdout)

    def test_a_measurement_in_prose_fails_with_its_line(self):
        for bad in ("ran 781 -> 710 us", "at 17.6 TFLOP/s", "0.95-1.17x cuBLAS", "took 2.8 us", "5% faster",
                    "600-1400 MHz", "244K tokens/s"):
            with tempfile.TemporaryDirectory() as d:
                self.tree(d, GOOD + bad + "\n")
                run = self.run_check(d, "numbers")
                self.assertEqual(run.returncode, 1, bad)
                self.assertIn(f"README.md:{GOOD.count(chr(10)) + 1}:", run.stdout)

    def test_a_note_without_its_data_file_fails(self):
        with tempfile.TemporaryDirectory() as d:
            self.tree(d, GOOD, note="A story with no data.\n")
            self.assertEqual(self.run_check(d, "notes").returncode, 1)

    def test_a_note_quoting_a_number_its_data_lacks_fails(self):
        for bad in ("18.2 TFLOP/s", "17.7", "26-54% faster", "1.5-7x"):
            with tempfile.TemporaryDirectory() as d:
                self.tree(d, GOOD, note=f"Data: `2026-11-25-h100-gemm-final.json`.\nIt ran {bad}.\n")
                run = self.run_check(d, "notes")
                self.assertEqual(run.returncode, 1, bad)
                self.assertIn("a.md:2:", run.stdout)


if __name__ == "__main__":
    unittest.main()
