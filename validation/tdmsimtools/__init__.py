"""tdmsimtools: the one place Python code runs tdmsim and reads what it writes.

Every script under validation/, scripts/ and tests/cli/ that starts tdmsim or reads
its outputs goes through this package, so that a change of command line or output
layout is made once:

  runner   start tdmsim (`tdmsim()`; for tests `expect_exit()` and `write_text()`), a scenario (`run()`), a microbenchmark
           (`microbench()`), make a GPU case (`gpu_case()`) and run it on the
           GPU runner (`gpu_run()`), and read summary.json and run.json
  outputs  a sweep's results.csv, results.jsonl and sensitivity.csv
  stats    error, MAPE and Spearman rank correlation for the accuracy reports
  report   the generated-report header, the parallel runner with progress, and the
           result store that lets a rerun simulate only what changed
  plots    the reports' figures: shared axes, a deterministic PNG writer and the
           simulated-against-published figure of AITER's tuned tables (matplotlib)

Scripts outside validation/ put validation/ on sys.path (`import tdmsimtools` then
works from any folder); the package needs only Debian's python3.
"""
from .runner import (ROOT, DEFAULT_TDMSIM, RunError, tdmsim, expect_exit, read_summary, write_text,  # noqa: F401
                     run, microbench, gpu_case, gpu_run, kernel_us, stage_times)
from .stats import err, mape, spearman  # noqa: F401
from . import outputs, report  # noqa: F401
