"""docs_help.py — the pages' copies of a program's --help are the program's: docs/echo_server.md and
docs/echo_client.md each show the whole text in a code block (from its first line to the block's end);
this runs each binary with --help and fails, printing the difference, when the page says otherwise (a
default changed in the library or the program and the page kept the old one).
    python3 test/docs_help.py REPOSITORY_ROOT BUILD_EXAMPLES_DIR"""
import difflib
import os
import subprocess
import sys

ROOT, BIN = sys.argv[1], sys.argv[2]
failed = False
for program in ("echo_server", "echo_client"):
    text = subprocess.run([os.path.join(BIN, program), "--help"], capture_output=True, text=True, timeout=30)
    if text.returncode != 0:
        sys.exit(f"{program} --help exited {text.returncode}: {text.stderr}")
    shown = text.stdout.strip().splitlines()
    page_path = os.path.join(ROOT, "docs", program + ".md")
    page = open(page_path, encoding="utf-8").read()
    at = page.find(shown[0])
    if at < 0:
        print(f"{page_path}: no copy of '{program} --help' (its first line: {shown[0]!r})")
        failed = True
        continue
    copy = page[at:page.index("```", at)].strip().splitlines()
    if copy != shown:
        print(f"{page_path}: the copy of '{program} --help' differs from the program's (- page, + program):")
        print("\n".join(difflib.unified_diff(copy, shown, lineterm="", n=0)))
        failed = True
sys.exit(1 if failed else 0)
