#!/usr/bin/env python3
"""Tests of bench/headlines.py and of results_md.py keeping README's headline numbers in step
(ctest: bench/headlines): queries over synthetic results, ranges and ratios, the README splice, and --check
failing when README's copy of a number, or a results file, changes."""
import json
import os
import random
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import headlines  # noqa: E402
import results_md  # noqa: E402

ROWS = [{"shape": "a", "mode": "fwd", "us": 9.31}, {"shape": "a", "mode": "fwd", "us": 9.34},
        {"shape": "a", "mode": "bwd", "us": 30.0}, {"shape": "b", "mode": "fwd", "us": 700.0}]


class Queries(unittest.TestCase):
    def test_values_span_every_matching_row(self):
        doc = {"results": ROWS}
        self.assertEqual(headlines.span(headlines.Values("results", {"shape": "a", "mode": "fwd"}, "us", ".2f"),
                                        doc), "9.31-9.34")
        self.assertEqual(headlines.span(headlines.Values("results", {"shape": "b"}, "us", headlines.micros), doc),
                         "700")

    def test_ratio_spans_every_pair(self):
        h = random.uniform(1, 2)
        doc = {"h": [{"v": h}, {"v": 2 * h}], "r": [{"v": 4 * h}]}
        ratio = headlines.Ratio(headlines.Values("h", {}, "v", ".2f"), headlines.Values("r", {}, "v", ".2f"), ".2f")
        self.assertEqual(headlines.span(ratio, doc), "0.25-0.50")

    def test_a_query_without_rows_names_what_it_sought(self):
        with self.assertRaisesRegex(LookupError, "shape.*'c'"):
            headlines.Values("results", {"shape": "c"}, "us", ".2f").values({"results": ROWS})

    def test_the_real_rows_render_from_bench_results(self):
        table = headlines.render(os.path.join(HERE, "results"))
        self.assertEqual(len(table), 2 + len(headlines.ROWS))
        self.assertTrue(all(line.count("|") == 5 for line in table))


class Readme(unittest.TestCase):
    def write(self, path, doc):
        with open(path, "w") as f:
            json.dump(doc, f) if path.endswith(".json") else f.write(doc)

    def test_check_fails_when_readme_or_the_data_changes(self):
        us = round(random.uniform(100, 900), 2)
        with tempfile.TemporaryDirectory() as d:
            results, readme, page = (os.path.join(d, n) for n in ("results", "README.md", "RESULTS.md"))
            os.mkdir(results)
            self.write(os.path.join(results, "2026-12-01-x.json"), {"results": [{"shape": "b", "us": us}]})
            self.write(readme, f"intro\n{headlines.BEGIN}\n| stale |\n{headlines.END}\nafter\n")
            row = headlines.Row("b", "2026-12-01-x.json", "{t} us", t=headlines.Values("results", {}, "us", ".1f"))

            def run(*extra):
                """results_md's exit status with `row` as the only headline."""
                argv, rows = sys.argv, headlines.ROWS[:]
                sys.argv = ["results_md.py", "--results", results, "--out", page, "--readme", readme, *extra]
                headlines.ROWS[:] = [row]
                try:
                    results_md.main()
                    return 0
                except SystemExit as e:
                    return e.code
                finally:
                    sys.argv, headlines.ROWS[:] = argv, rows

            self.assertEqual(run("--check"), 1)
            self.assertEqual(run(), 0)
            with open(readme) as f:
                text = f.read()
            self.assertIn(f"| b | {us:.1f} us |  | `bench/results/2026-12-01-x.json` |", text)
            self.assertTrue(text.startswith("intro\n") and text.endswith(f"{headlines.END}\nafter\n"))
            self.assertEqual(run("--check"), 0)
            self.write(readme, text.replace(f"{us:.1f} us", f"{us + 1:.1f} us"))
            self.assertEqual(run("--check"), 1)
            run()
            self.write(os.path.join(results, "2026-12-01-x.json"), {"results": [{"shape": "b", "us": us + 5}]})
            self.assertEqual(run("--check"), 1)

    def test_splice_needs_both_markers(self):
        self.assertIsNone(headlines.splice("no markers here", ["| x |"]))
        self.assertIsNone(headlines.splice(f"{headlines.END}\n{headlines.BEGIN}", ["| x |"]))


if __name__ == "__main__":
    unittest.main()
