"""layering.py — the tree's arrows, checked from the sources: every #include is resolved to the room it
comes from and judged against the rooms that room may use. The timer core (lib/) uses nothing above
it; net/ uses lib/; an example's server and client use the library and their own example only; the
project's tests and fuzzers use the library and the test support, never an example (an example's own
tests and fuzzers live beside it, in examples/<name>/test and examples/<name>/fuzz, and may use the
project's test support); tools/ (what only benchmarks and acceptance need, such as echo_server's
baselines) uses the library and the examples, which never use it; bench/ may use anything. A quoted
include is looked up the way the build's include paths do (the file's own folder, then the roots
below); an angle include of <heartwheel/...> is the library's. Prints each include that points the wrong way and exits 1 if there is one.
    python3 test/layering.py [repository root]"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
# Where a quoted include may be found, as the build's include paths give them.
SEARCH = ["lib/include", "net/include", "examples", "test/support", "fuzz", "tools"]
ALLOWED = {
    "lib": {"lib"},
    "net": {"lib", "net"},
    "example": {"lib", "net", "example"},
    "example-test": {"lib", "net", "example", "example-test", "test", "fuzz"},
    "test": {"lib", "net", "test"},
    "fuzz": {"lib", "net", "fuzz", "test"},
    "tools": {"lib", "net", "example", "tools"},
    "bench": {"lib", "net", "example", "test", "fuzz", "tools", "bench"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.M)


def room(rel):
    """The room a repository path belongs to (None: not a source of the project's layers)."""
    parts = rel.split(os.sep)
    if parts[0] in ("lib", "net", "test", "fuzz", "tools", "bench"):
        return parts[0]
    if parts[0] == "examples":
        return "example-test" if len(parts) > 3 and parts[2] in ("test", "fuzz") else "example"
    return None


def resolve(source, kind, name):
    if kind == "<":
        if not name.startswith("heartwheel/"):
            return None  # the standard library, Asio, Boost, OpenSSL: outside the layers
        for base in ("net/include", "lib/include"):
            if os.path.exists(os.path.join(ROOT, base, name)):
                return os.path.join(base, name)
        return "unresolved"
    for base in [os.path.dirname(source)] + SEARCH:
        candidate = os.path.normpath(os.path.join(base, name))
        if os.path.exists(os.path.join(ROOT, candidate)):
            return candidate
    return "unresolved"


def main():
    wrong, checked = [], 0
    for top in ("lib", "net", "examples", "test", "fuzz", "tools", "bench"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if not f.endswith((".hpp", ".cpp", ".h")):
                    continue
                source = os.path.relpath(os.path.join(dirpath, f), ROOT)
                mine = room(source)
                with open(os.path.join(ROOT, source), encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                for kind, name in INCLUDE.findall(text):
                    target = resolve(source, kind, name)
                    if target is None:
                        continue
                    checked += 1
                    if target == "unresolved":
                        wrong.append(f"{source}: #include {name} is found in none of the project's folders")
                        continue
                    theirs = room(target)
                    if theirs not in ALLOWED[mine]:
                        wrong.append(f"{source}: #include {name} ({target}): {mine} may not use {theirs}")
    for line in wrong:
        print(line)
    print(f"layering: {checked} includes of the project's own files checked, {len(wrong)} pointing the wrong way")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
