#!/usr/bin/env python3
"""validation/data/MANIFEST.md against the tree (CTest pydata.data_manifest):

- every file under validation/data/ (README.md files aside) is named by a row of the
  "Current" table, and every path that table names exists (a path ending in / names a
  folder, every file in it: one measurement's scenarios, runs and device record);
- every row of the "Current" table fills what, device, date, commit and command (a date
  as YYYY-MM-DD);
- every path of the "Retired" table is gone from the tree and, in a git checkout, is at
  the commit the row names (a `first ... last` range: both ends).

Usage: data_manifest_checks.py [ROOT]   (default: the repository holding this script)"""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else \
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "validation", "data")
MANIFEST = os.path.join(DATA, "MANIFEST.md")
PATH = re.compile(r"`([^`]+)`")


def tables(text):
    """{section heading: [cells of each body row]} of the level-2 sections' tables."""
    out, section = {}, None
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("## "):
            section = line[3:].split(" (")[0].strip()
            out[section] = []
        elif section and line.startswith("| ") and not line.startswith("| path ") and not line.startswith("|---"):
            out[section].append((n, [c.strip() for c in line.strip().strip("|").split("|")]))
    return out


def paths_of(cell):
    """The backquoted paths of a path cell; `a ... b` names both ends of a range."""
    return PATH.findall(cell)


def at_commit(commit, path):
    r = subprocess.run(["git", "-C", ROOT, "cat-file", "-e", f"{commit}:validation/data/{path}"],
                       capture_output=True, text=True)
    return r.returncode == 0


def main():
    errors = []
    with open(MANIFEST) as f:
        t = tables(f.read())
    for need in ("Current", "Retired"):
        if need not in t or not t[need]:
            sys.exit(f"FAILED: {MANIFEST}: no '## {need}' table")
    listed = set()
    for n, cells in t["Current"]:
        if len(cells) != 6:
            errors.append(f"{MANIFEST}:{n}: {len(cells)} columns, expected 6 (path, what, device, date, commit, command)")
            continue
        for p in paths_of(cells[0]):
            if p.endswith("/"):
                if not os.path.isdir(os.path.join(DATA, p)):
                    errors.append(f"{MANIFEST}:{n}: {p}: no such folder under validation/data")
                for dirpath, _, files in os.walk(os.path.join(DATA, p)):
                    listed.update(os.path.relpath(os.path.join(dirpath, f), DATA) for f in files)
                continue
            listed.add(p)
            if not os.path.isfile(os.path.join(DATA, p)):
                errors.append(f"{MANIFEST}:{n}: {p}: no such file under validation/data")
        for col, name in zip(cells[1:], ("what", "device", "date", "commit", "command")):
            if not col:
                errors.append(f"{MANIFEST}:{n}: {cells[0]}: empty {name}")
        if not re.match(r"\d{4}-\d{2}-\d{2}", cells[3]):
            errors.append(f"{MANIFEST}:{n}: date '{cells[3]}' is not YYYY-MM-DD")
        if not re.match(r"[0-9a-f]{7,40}\b", cells[4]):
            errors.append(f"{MANIFEST}:{n}: commit '{cells[4]}' does not start with a commit hash")
    for dirpath, dirs, files in os.walk(DATA):
        for name in files:
            rel = os.path.relpath(os.path.join(dirpath, name), DATA)
            if name != "README.md" and rel != "MANIFEST.md" and rel not in listed:
                errors.append(f"validation/data/{rel}: in no row of {MANIFEST}'s Current table")
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--git-dir"], capture_output=True).returncode == 0
    checked = 0
    for n, cells in t["Retired"]:
        commit = cells[-1]
        for p in paths_of(cells[0]):
            if os.path.exists(os.path.join(DATA, p)):
                errors.append(f"{MANIFEST}:{n}: {p} is listed as retired but is in the tree")
            if git:
                checked += 1
                if not at_commit(commit, p):
                    errors.append(f"{MANIFEST}:{n}: {p} is not at commit {commit}")
    if errors:
        print("\n".join("FAILED: " + e for e in errors))
        return 1
    print(f"ok: {len(listed)} current files, {len(t['Retired'])} retired rows"
          + (f" ({checked} paths found at their commits)" if git else " (not a git checkout: commits not checked)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
