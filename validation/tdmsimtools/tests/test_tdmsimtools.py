"""Unit tests of validation/tdmsimtools (CTest pydata.tdmsimtools_unit).

  python3 validation/tdmsimtools/tests/test_tdmsimtools.py [-v]

A fake tdmsim (a shell script writing a known summary.json) checks the command lines
and the reading of outputs; with TDMSIM set to the built binary, one short
microbenchmark runs on the real one too."""
import json
import math
import os
import stat
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import tdmsimtools  # noqa: E402
from tdmsimtools import outputs, report  # noqa: E402

SUMMARY = {"paths": [{"path": "software", "total_us": 10.0, "stages": [
    {"stage": "gate_up", "time_us": 4.0, "launch_overhead_us": 1.0},
    {"stage": "down", "time_us": 3.0, "launch_overhead_us": 0.5},
    {"stage": "gate_up", "time_us": 2.0, "launch_overhead_us": 1.0}]}],
    "bandwidth": {"value": 1234.5, "unit": "GB/s"}}

# Records its arguments, then writes SUMMARY into the folder after --output; exits 3
# with a message on stderr when the first argument is "fail".
FAKE = """#!/bin/sh
echo "$@" > "$(dirname "$0")/args.txt"
if [ "$1" = fail ]; then echo "Error: no such thing" >&2; exit 3; fi
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = --output ]; then out="$2"; fi
  shift
done
if [ -n "$out" ]; then mkdir -p "$out" && cat > "$out/summary.json" <<'JSON'
%s
JSON
fi
echo ok
"""


class FakeTdmsim(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.bin = os.path.join(self.dir, "tdmsim")
        with open(self.bin, "w") as f:
            f.write(FAKE % json.dumps(SUMMARY))
        os.chmod(self.bin, os.stat(self.bin).st_mode | stat.S_IEXEC)

    def tearDown(self):
        self.tmp.cleanup()

    def args(self):
        with open(os.path.join(self.dir, "args.txt")) as f:
            return f.read().split()

    def test_run_passes_options_and_reads_summary(self):
        out = os.path.join(self.dir, "out")
        s = tdmsimtools.run(self.bin, "sc.yaml", out, path="software", machine="m.yaml", extra=["--repeat", 2])
        self.assertEqual(s, SUMMARY)
        self.assertEqual(self.args(), ["run", "sc.yaml", "--path", "software", "--quiet", "--force", "--output",
                                       out, "--machine", "m.yaml", "--repeat", "2"])

    def test_microbench_in_a_temporary_folder(self):
        s = tdmsimtools.microbench(self.bin, "copy", "h200", ["--bytes", "1GiB"])
        self.assertEqual(s["bandwidth"]["value"], 1234.5)
        a = self.args()
        self.assertEqual(a[:5], ["microbench", "copy", "--machine", "h200", "--bytes"])
        self.assertEqual(a[-1], "--quiet")
        self.assertFalse(os.path.exists(a[a.index("--output") + 1]), "the temporary folder is left behind")

    def test_failure_names_the_run_and_the_error(self):
        with self.assertRaises(tdmsimtools.RunError) as e:
            tdmsimtools.tdmsim(self.bin, "fail", "x", check=True, label="line 7")
        self.assertEqual(str(e.exception), "line 7: tdmsim failed (exit 3): Error: no such thing")
        self.assertEqual(e.exception.returncode, 3)
        p = tdmsimtools.tdmsim(self.bin, "fail")  # without check: the exit code is the caller's
        self.assertEqual(p.returncode, 3)

    def test_expect_exit(self):
        self.assertEqual(tdmsimtools.expect_exit(self.bin, "fail", rc=3).returncode, 3)
        with self.assertRaises(SystemExit) as e:
            tdmsimtools.expect_exit(self.bin, "fail")
        self.assertIn("FAILED: exit 3, expected 0: tdmsim fail", str(e.exception.code))
        self.assertEqual(tdmsimtools.expect_exit(self.bin, "config", "list").stdout, "ok\n")

    def test_stage_times(self):
        self.assertEqual(tdmsimtools.stage_times(SUMMARY), {"gate_up": 6.0, "down": 3.0})
        self.assertEqual(tdmsimtools.stage_times(SUMMARY, kernel_only=True), {"gate_up": 4.0, "down": 2.5})
        self.assertEqual(tdmsimtools.kernel_us(SUMMARY["paths"][0]["stages"][1]), 2.5)

    def test_store_key_and_result_store(self):
        a = os.path.join(self.dir, "a.yaml")
        with open(a, "w") as f:
            f.write(f"model: {self.dir}/m.yaml\n")
        k1 = report.store_key(self.bin, [a])
        self.assertEqual(k1, report.store_key(self.bin, [a]))
        self.assertNotEqual(k1, report.store_key(self.bin, [a], strip=self.dir))
        with open(a, "a") as f:
            f.write("tokens: 2\n")
        self.assertNotEqual(k1, report.store_key(self.bin, [a]))
        store = report.ResultStore(os.path.join(self.dir, "store"), "p-")
        self.assertIsNone(store.get(k1))
        store.put(k1, {"sim1": 1.5})
        self.assertEqual(store.get(k1), {"sim1": 1.5})
        self.assertTrue(os.path.exists(os.path.join(self.dir, "store", f"p-{k1}.json")))
        self.assertIsNone(report.ResultStore(None).get(k1))

    def test_fit_overlay(self):
        path = report.fit_overlay(self.dir, "mi300x", "atomic_bytes_per_clock_per_channel", (4, 0.5))
        with open(path) as f:
            text = f.read()
        self.assertEqual(os.path.basename(path), "mi300x_fit_4_0.5.yaml")
        self.assertIn("memory: {l2: {atomic_bytes_per_clock_per_channel: 4}}\n", text)
        self.assertIn("kernels: {matrix_efficiency: 0.5}\n", text)
        self.assertIn(os.path.join(tdmsimtools.ROOT, "workloads", "machines", "mi300x.yaml"), text)


class Outputs(unittest.TestCase):
    def test_sweep_files(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "results.csv"), "w") as f:
                f.write('path,total_us,name\nsoftware,1.5,"a,b"\ntdm,1.0,c\n')
            with open(os.path.join(d, "results.jsonl"), "w") as f:
                f.write('{"point": 0}\n\n{"point": 1}\n')
            with open(os.path.join(d, "sensitivity.csv"), "w") as f:
                f.write("parameter,rank,base_speedup\nclock,1,1.2\n")
            rows = outputs.read_results_csv(d)
            self.assertEqual([r["name"] for r in rows], ["a,b", "c"])
            self.assertEqual(rows, outputs.read_results_csv(os.path.join(d, "results.csv")))
            self.assertEqual(outputs.read_results_jsonl(d), [{"point": 0}, {"point": 1}])
            self.assertEqual(outputs.read_sensitivity(d)[0]["parameter"], "clock")
            header, _ = outputs.read_table(d, "sensitivity.csv")
            self.assertTrue(outputs.is_sensitivity(header))
            self.assertFalse(outputs.is_sensitivity(outputs.read_table(d)[0]))


class Stats(unittest.TestCase):
    def test_err_and_mape(self):
        self.assertAlmostEqual(tdmsimtools.err(11.0, 10.0), 0.1)
        rows = [dict(s=11.0, r=10.0), dict(s=8.0, r=10.0)]
        self.assertAlmostEqual(tdmsimtools.mape(rows, "s", "r"), 15.0)
        self.assertTrue(math.isnan(tdmsimtools.mape([], "s", "r")))

    def test_spearman(self):
        self.assertAlmostEqual(tdmsimtools.spearman([1, 2, 3, 4], [10, 20, 30, 40]), 1.0)
        self.assertAlmostEqual(tdmsimtools.spearman([1, 2, 3, 4], [4, 3, 2, 1]), -1.0)
        # Ties take their average rank: ranks (0, 1.5, 1.5, 3) against (0, 1, 2, 3).
        self.assertAlmostEqual(tdmsimtools.spearman([1, 2, 2, 3], [1, 2, 3, 4]), 0.9486832980505138)
        self.assertTrue(math.isnan(tdmsimtools.spearman([1], [1])))
        self.assertTrue(math.isnan(tdmsimtools.spearman([1, 1, 1], [1, 2, 3])))


class Report(unittest.TestCase):
    def test_header_and_skipped_section(self):
        h = report.generated_header("validation/x.py --fit")
        self.assertTrue(h.startswith("Generated by the command below; do not edit by hand.\n\n"
                                     "    validation/x.py --fit\n\nRun "))
        self.assertTrue(h.endswith(f"({os.cpu_count()} CPUs).\n\n"))
        self.assertEqual(report.script_command("validation/x.py", ["x.py", "--a", "1"]), "validation/x.py --a 1")
        s = report.skipped_section("MI300X, title", "/p.csv", "../shared/p.csv")
        self.assertEqual(s, "## MI300X, title\n\n**Skipped:** the measured file `/p.csv` is not present on this "
                            "machine (it lives in\n`../shared/p.csv`, outside the project, and is never copied "
                            "into it).\n")

    def test_parallel(self):
        seen = []
        done = report.parallel(lambda x: x * x, [1, 2, 3, 4], 2, "t", quiet=True, on_result=seen.append)
        self.assertEqual(sorted(done), [1, 4, 9, 16])
        self.assertEqual(sorted(seen), sorted(done))
        with self.assertRaises(ZeroDivisionError):
            report.parallel(lambda x: 1 / x, [1, 0], 1, "t", quiet=True)
        # A failure drops the items not yet started (one worker: the first fails, the
        # other 49 are cancelled rather than run).
        ran = []

        def fail_first(x):
            ran.append(x)
            if x == 0:
                raise ValueError("first")
            time.sleep(0.02)  # (so that the cancellation comes long before the last would start)
            return x

        with self.assertRaises(ValueError):
            report.parallel(fail_first, list(range(50)), 1, "t", quiet=True)
        self.assertLess(len(ran), 50)


@unittest.skipUnless(os.environ.get("TDMSIM"), "TDMSIM (the built binary) not set")
class RealTdmsim(unittest.TestCase):
    def test_microbench_copy(self):
        s = tdmsimtools.microbench(os.environ["TDMSIM"], "copy", "h200", ["--bytes", "16MiB"])
        self.assertEqual(s["bandwidth"]["unit"], "GB/s")
        self.assertGreater(s["bandwidth"]["value"], 0)

    def test_bad_input_is_run_error(self):
        with self.assertRaises(tdmsimtools.RunError) as e:
            tdmsimtools.run(os.environ["TDMSIM"], "/nonexistent.yaml", "/nonexistent-out")
        self.assertEqual(e.exception.returncode, 2)


if __name__ == "__main__":
    unittest.main()
