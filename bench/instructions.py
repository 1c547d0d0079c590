#!/usr/bin/env python3
"""Instructions per timer operation, counted by callgrind (bench/instructions.cpp), recorded and checked.

  instructions.py record BIN OUT.json [N K]   every system and operation (bench/run_instructions.sh)
  instructions.py check BIN RECORDED.json     heartwheel's operations against the recorded figures

callgrind counts the instructions a program runs, not time: the same binary gives the same count on a
busy machine and a quiet one, so a check can hold a figure to 5 % without being a timing test. A count
depends on the compiler and its flags, so the recording names the build (`BIN --build`) and the check
compares only with the same build; any other build, or no valgrind, is a skip (exit 77) that says why.
What is compared is the operation alone: for the looped operations the harness's own loop (`loop`)
is subtracted, as on the benchmarks page.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

SYSTEMS = ["heartwheel", "asio", "libevent", "libevent-common", "libev", "libuv", "heap"]
OPS = ["loop", "arm", "arm_tick", "cancel", "rearm", "touch", "expire", "expire_cascade"]
ONLY_HEARTWHEEL = {"arm_tick", "touch"}
ONLY_WHEEL_AND_HEAP = {"expire_cascade"}
LOOPED = {"arm", "arm_tick", "cancel", "rearm", "touch"}  # expire is one call, per fired timer
TOLERANCE = 0.05
SKIP = 77


def build_of(binary):
    return subprocess.run([binary, "--build"], check=True, capture_output=True, text=True).stdout.strip()


def count(binary, system, op, n, k):
    """One callgrind run: the measured loop's instructions and how many operations it made."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        run = subprocess.run(["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--callgrind-out-file={out}",
                              binary, system, op, str(n), str(k)], capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"{system} {op}: exit {run.returncode}: {run.stderr[-2000:]}")
        ops = int(next(line[4:] for line in run.stdout.splitlines() if line.startswith("ops=")))
        with open(out) as f:
            total = int(next(line.split()[1] for line in f if line.startswith("totals:")))
    return {"system": system, "op": op, "n": n, "ops": ops, "instructions": total, "per_op": round(total / ops, 1)}


def applies(system, op):
    if op in ONLY_HEARTWHEEL:
        return system == "heartwheel"
    if op in ONLY_WHEEL_AND_HEAP:
        return system in ("heartwheel", "heap")
    return True


def record(binary, out, n, k):
    results = []
    for system in SYSTEMS:
        for op in OPS:
            if applies(system, op):
                r = count(binary, system, op, n, k)
                print(f"{system} {op}: {r['per_op']} instructions/op ({r['instructions']} / {r['ops']})", file=sys.stderr)
                results.append(r)
    with open(out, "w") as f:
        json.dump({"build": build_of(binary), "n": n, "k": k, "results": results}, f, separators=(",", ":"))
        f.write("\n")


def operation_only(figures):
    """{op: instructions per operation, the harness loop subtracted where the op is looped}."""
    loop = figures.get("loop", 0.0)
    return {op: v - loop if op in LOOPED else v for op, v in figures.items() if op != "loop"}


def check(binary, recorded_path):
    recorded = json.load(open(recorded_path))
    build = build_of(binary)
    if recorded.get("build") != build:
        print(f"SKIP: {recorded_path} records the build '{recorded.get('build')}'; this one is '{build}' "
              "(instruction counts are compared between identical builds only)")
        return SKIP
    if shutil.which("valgrind") is None:
        print("SKIP: valgrind is not installed (scripts/install-deps.sh installs it)")
        return SKIP
    n, k = recorded["n"], recorded["k"]
    was = {r["op"]: r["per_op"] for r in recorded["results"] if r["system"] == "heartwheel"}
    now = {op: count(binary, "heartwheel", op, n, k)["per_op"] for op in was}
    was_op, now_op = operation_only(was), operation_only(now)
    grown = []
    print(f"heartwheel at {n:,} timers, instructions per operation (loop {was.get('loop')} -> {now.get('loop')}):")
    for op in was_op:
        limit = was_op[op] * (1 + TOLERANCE)
        verdict = "ok" if now_op[op] <= limit else f"GREW more than {TOLERANCE:.0%}"
        if now_op[op] <= limit and now_op[op] < was_op[op] * (1 - TOLERANCE):
            verdict = "ok, fewer: record them (bash bench/run_instructions.sh)"
        print(f"  {op:15} recorded {was_op[op]:7.1f}  now {now_op[op]:7.1f}  {verdict}")
        if now_op[op] > limit:
            grown.append(op)
    if grown:
        print(f"FAIL: {', '.join(grown)} cost more than {TOLERANCE:.0%} over the figures in {recorded_path}")
        return 1
    return 0


def main(argv):
    if len(argv) in (4, 6) and argv[1] == "record":
        n, k = (int(argv[4]), int(argv[5])) if len(argv) == 6 else (1_000_000, 100_000)
        record(argv[2], argv[3], n, k)
        return 0
    if len(argv) == 4 and argv[1] == "check":
        return check(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
