#!/usr/bin/env python3
"""Compiles and runs the C programs of docs/api.md against the built C API.

Every ```c block of the page that defines main() is a whole program: it is
written out, compiled as C99 with -Wall -Wextra -pedantic -Werror against
include/ and libtdmsim.a, and run with the example scenario as its argument;
it must exit 0. Blocks without main() are fragments and are compiled on their
own (-fsyntax-only) after the header, so a renamed field breaks them too.

  api_snippets_checks.py SOURCE_DIR LIBTDMSIM_A WORK_DIR CC
"""
import os
import re
import shlex
import subprocess
import sys


def main():
    source, lib, work, cc = sys.argv[1:5]
    text = open(os.path.join(source, "docs", "api.md"), encoding="utf-8").read()
    blocks = re.findall(r"^```c\n(.*?)^```", text, flags=re.S | re.M)
    if not blocks:
        sys.exit("docs/api.md: no ```c blocks found")
    os.makedirs(work, exist_ok=True)
    libs = subprocess.run(["pkg-config", "--libs", "systemc", "yaml-cpp", "fmt", "tbb"],
                          check=True, capture_output=True, text=True).stdout.split()
    scenario = os.path.join(source, "examples", "c", "tiny-moe.yaml")
    flags = ["-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror",
             "-I", os.path.join(source, "include")]
    programs = fragments = 0
    failed = []
    for i, code in enumerate(blocks):
        name = os.path.join(work, f"snippet{i}.c")
        whole = re.search(r"\bint main\(", code) is not None
        with open(name, "w", encoding="utf-8") as f:
            if not whole:
                f.write("#include <stdio.h>\n#include <string.h>\n#include <tdmsim/tdmsim_moe.h>\n"
                        "#include <tdmsim/hipext_moe.h>\n")
            f.write(code)
        if whole:
            exe = name[:-2]
            cmd = [cc, *flags, "-o", exe, name, lib, *libs, "-lstdc++", "-lm"]
        else:
            cmd = [cc, *flags, "-Wno-unused-function", "-fsyntax-only", name]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            failed.append(f"block {i} does not compile:\n{' '.join(map(shlex.quote, cmd))}\n{r.stderr}\n{code}")
            continue
        if whole:
            programs += 1
            r = subprocess.run([exe, scenario], capture_output=True, text=True, cwd=work)
            print(f"--- block {i} output:\n{r.stdout}{r.stderr}")
            if r.returncode != 0:
                failed.append(f"block {i} exited {r.returncode}:\n{r.stdout}{r.stderr}\n{code}")
        else:
            fragments += 1
    for f in failed:
        print(f, file=sys.stderr)
    if failed or programs == 0:
        sys.exit(1)
    print(f"docs/api.md: {programs} programs ran, {fragments} fragments compiled")


if __name__ == "__main__":
    main()
