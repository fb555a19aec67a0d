"""A sweep's outputs (tdmsim sweep --output DIR): results.csv (one row per point,
columns as in docs/sweeps.md), results.jsonl (the journal, one JSON object per
finished point) and, for a `mode: oat` sweep, sensitivity.csv (one row per
parameter). Each reader takes the file or the folder holding it."""
import csv
import json
import os


def _file(path, name):
    return os.path.join(path, name) if os.path.isdir(path) else path


def read_table(path, name="results.csv"):
    """(header, rows as dicts) of a CSV that tdmsim wrote (results.csv or sensitivity.csv)."""
    with open(_file(path, name), newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
        return reader.fieldnames or [], rows


def read_results_csv(path):
    """results.csv's rows as dicts (column name -> text)."""
    return read_table(path, "results.csv")[1]


def read_results_jsonl(path):
    """results.jsonl's points as dicts, in file order (blank lines skipped)."""
    with open(_file(path, "results.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def read_sensitivity(path):
    """sensitivity.csv's rows as dicts (parameter, low/high values and speedups, ...)."""
    return read_table(path, "sensitivity.csv")[1]


def is_sensitivity(header):
    """Whether a CSV header is a sensitivity.csv's (and not a results.csv's)."""
    return "parameter" in header and "base_speedup" in header
