"""A sweep's outputs (tdmsim sweep --output DIR): results.csv (one row per point,
columns as in docs/sweeps.md), results.jsonl (the journal, one JSON object per
finished point) and, for a `mode: oat` sweep, sensitivity.csv (one row per
parameter). Each reader takes the file or the folder holding it."""
import csv
import json
import os


def _file(path, name):
    return os.path.join(path, name) if os.path.isdir(path) else path


class TableError(ValueError):
    """A CSV that is not a whole table: 'FILE:LINE: what is wrong'."""


def read_table(path, name="results.csv"):
    """(header, rows as dicts) of a CSV that tdmsim wrote (results.csv or sensitivity.csv).
    A row with fewer or more fields than the header (a torn or hand-edited file), a
    header with a column twice, or text that is not UTF-8 CSV raises TableError naming
    the file and line."""
    file = _file(path, name)
    try:
        with open(file, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader, None) or []
            if len(set(header)) != len(header):
                twice = sorted({h for h in header if header.count(h) > 1})
                raise TableError(f"{file}:1: column {', '.join(twice)} appears twice in the header")
            rows = []
            for fields in reader:
                if not fields:
                    continue  # a blank line
                if len(fields) != len(header):
                    raise TableError(f"{file}:{reader.line_num}: row has {len(fields)} field{'' if len(fields) == 1 else 's'}, "
                                     f"the header {len(header)}")
                rows.append(dict(zip(header, fields)))
            return header, rows
    except (UnicodeDecodeError, csv.Error) as e:
        raise TableError(f"{file}: not a CSV table: {e}") from None


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
