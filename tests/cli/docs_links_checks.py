#!/usr/bin/env python3
"""Cross-references in the docs resolve (CTest docs.links_resolve).

    tests/cli/docs_links_checks.py REPO_ROOT

Checks README.md and docs/*.md (docs/studies/ included):
- every relative Markdown link [text](path) names a file or folder that exists
  (an #anchor after it is not checked);
- every mention of a doc page (`docs/NAME.md`) names a page that exists;
- every mention of a page followed by a quoted section name, as in
  docs/simulator.md "Speed", names a heading of that page (a heading that starts
  with the quoted text, so "Accuracy (H200)" matches "Accuracy (H200): the sort").
Prints each broken reference as FILE:LINE: message and exits 1 if there is one.
"""
import os
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
PAGE = re.compile(r"(?<![\w/.-])((?:\.\./)?docs/[\w./-]+\.md)")
SECTION = re.compile(r"(?<![\w/.-])((?:docs/)?[\w-]+\.md)[`]?,? \"([^\"]+)\"")


def headings(path, cache={}):
    if path not in cache:
        found = []
        in_code = False
        for line in open(path, encoding="utf-8"):
            if line.startswith("```"):
                in_code = not in_code
            elif not in_code and line.startswith("#"):
                found.append(line.lstrip("#").strip().strip("`").replace("`", ""))
        cache[path] = found
    return cache[path]


def main():
    root = os.path.abspath(sys.argv[1])
    files = [os.path.join(root, "README.md")]
    for d, _, names in os.walk(os.path.join(root, "docs")):
        files += [os.path.join(d, n) for n in sorted(names) if n.endswith(".md")]
    errors = []
    for f in files:
        rel = os.path.relpath(f, root)
        for n, line in enumerate(open(f, encoding="utf-8"), 1):
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target) or target.startswith("#"):
                    continue
                path = target.split("#", 1)[0]
                if path and not os.path.exists(os.path.join(os.path.dirname(f), path)):
                    errors.append(f"{rel}:{n}: link to {target}: no such file")
            for page in PAGE.findall(line):
                if page.startswith("../"):
                    continue
                # docs/SUB/x.md with a SUB this tree lacks is another repository's file
                # (docs/published-measurements.md cites some by path).
                sub = os.path.dirname(page)
                if sub != "docs" and not os.path.isdir(os.path.join(root, sub)):
                    continue
                if not os.path.exists(os.path.join(root, page)):
                    errors.append(f"{rel}:{n}: {page}: no such page")
            for page, section in SECTION.findall(line):
                path = os.path.join(root, page if page.startswith("docs/") else
                                    os.path.join(os.path.relpath(os.path.dirname(f), root), page))
                if not os.path.exists(path):
                    path = os.path.join(root, "docs", os.path.basename(page))
                if not os.path.exists(path):
                    continue  # reported above when it is a docs/ page
                wanted = section.replace("`", "")
                if not any(h.startswith(wanted) for h in headings(path)):
                    errors.append(f'{rel}:{n}: {page} "{section}": no such section')
    for e in errors:
        print(e)
    print(f"{len(files)} pages checked, {len(errors)} broken references")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
