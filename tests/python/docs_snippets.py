#!/usr/bin/env python3
"""Runs every ```python block of docs/api.md, from the source tree, with the
module on the path (test python.docs_snippets).

  docs_snippets.py SOURCE_DIR
"""
import os
import re
import sys

source = sys.argv[1]
text = open(os.path.join(source, "docs", "api.md"), encoding="utf-8").read()
blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
if not blocks:
    sys.exit("docs/api.md: no ```python blocks")
os.chdir(source)
for i, code in enumerate(blocks):
    print(f"--- python block {i}")
    exec(compile(code, f"docs/api.md python block {i}", "exec"), {"__name__": "__main__"})
print(f"docs/api.md: {len(blocks)} python blocks ran")
