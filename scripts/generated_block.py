"""Replaces a generated block of a doc: the text between a BEGIN and an END marker line
(the markers included), as the table generators in scripts/ write them."""
import os
import sys


def replace_block(doc, begin, end, block, check=False, regenerate=""):
    """Puts `block` (which starts with `begin` and ends with `end`) in place of the doc's.
    check: only compare, exit status 1 if the doc differs (`regenerate` says how to fix it).
    Returns the exit status: 0, 1 (differs, with check) or 2 (the doc has no markers)."""
    text = open(doc).read()
    if begin not in text or end not in text:
        print(f"{doc}: no {begin!r} / {end!r} markers", file=sys.stderr)
        return 2
    new = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    if check:
        if new != text:
            print(f"{doc}: the generated block differs; run {regenerate}", file=sys.stderr)
            return 1
        return 0
    if new != text:
        with open(doc + ".tmp", "w") as f:
            f.write(new)
        os.replace(doc + ".tmp", doc)
    return 0
