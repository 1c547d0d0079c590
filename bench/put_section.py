"""put_section.py NAME — replaces the text between <!-- NAME begin --> and <!-- NAME end --> in
docs/benchmarks.md with standard input (the benchmark scripts' generated tables)."""
import os
import re
import sys

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "benchmarks.md")
name = sys.argv[1]
begin, end = f"<!-- {name} begin -->", f"<!-- {name} end -->"
# The page is read once the section's text is here, not before: a benchmark runs for minutes, and the
# page read at its start would be written back over whatever changed meanwhile.
body = sys.stdin.read().strip()
text = open(path).read()
if begin not in text or end not in text:
    sys.exit(f"{path}: markers for '{name}' not found")
text = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: begin + "\n" + body + "\n" + end, text, flags=re.S)
open(path, "w").write(text)
print(f"updated section '{name}' of docs/benchmarks.md", file=sys.stderr)
