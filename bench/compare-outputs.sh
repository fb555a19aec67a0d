#!/usr/bin/env bash
# Compares two folders written by bench/record-outputs.sh byte for byte; prints
# each file that differs and exits 1 if any does.
set -uo pipefail
if diff -rq "$1" "$2"; then
  echo "identical: $(find "$1" -type f | wc -l) files"
else
  exit 1
fi
