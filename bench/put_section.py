"""put_section.py NAME — replaces the text between <!-- NAME begin --> and <!-- NAME end --> in
docs/benchmarks.md with standard input (the benchmark scripts' generated tables)."""
import os
import re
import sys

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "benchmarks.md")
name = sys.argv[1]
begin, end = f"<!-- {name} begin -->", f"<!-- {name} end -->"
text = open(path).read()
if begin not in text or end not in text:
    sys.exit(f"{path}: markers for '{name}' not found")
body = sys.stdin.read().strip()
text = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: begin + "\n" + body + "\n" + end, text, flags=re.S)
open(path, "w").write(text)
print(f"updated section '{name}' of docs/benchmarks.md", file=sys.stderr)
