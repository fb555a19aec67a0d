"""The value lines of a shipped YAML file with the source each one's comment gives, as the
provenance tables in docs/calibration.md list them (scripts/kernel-profile-table.py,
validation/collectives.py)."""
import re

LINE = re.compile(r"^(\s*)([A-Za-z_0-9]+):\s*([^#]*?)\s*(?:#\s*(.*))?$")


def value_lines(path):
    """(dotted key path, value, comment) for each line of `path` that sets a value;
    section lines (a key without a value) only name the keys below them."""
    out, stack = [], []
    with open(path) as f:
        for line in f:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            m = LINE.match(line.rstrip("\n"))
            if not m:
                continue
            indent, key, value, comment = len(m.group(1)), m.group(2), m.group(3), m.group(4) or ""
            while stack and stack[-1][0] >= indent:
                stack.pop()
            if not value:  # a section
                stack.append((indent, key))
                continue
            out.append((".".join([k for _, k in stack] + [key]), value, comment))
    return out
