"""side_by_side.py — run an end-to-end suite's test classes side by side, each in its own process.

The end-to-end suites wait on real timers (idle deadlines, heartbeats, stalls, lingering goodbyes) far
more than they compute: test_echo_server.py is ~170 s of wall time for ~6 s of CPU. One class after
another they dominated the test command; side by side a suite takes about as long as its slowest
class. Each class runs in a process of its own (its own servers on their own ports, its own
certificates), so classes share nothing but the machine, and every assertion stays as it was: a
test's bounds are generous enough for a loaded machine, which the sanitizer builds already are.

Invariants: with names on the command line (`Class`, `Class.test_x`) a suite runs exactly those, in
this process, as unittest would (how one runs a single test, and how each child is started); the
suite fails when any class fails, and every class's output is printed whole, never interleaved.
HEARTWHEEL_E2E_JOBS bounds the classes running at once (default 8; in a sanitized build, whose
servers compute several times more, 4 or what the suite says; 1 runs everything in this process, one
class after another)."""
import os
import subprocess
import sys
import tempfile
import time
import unittest


def jobs(sanitized_at_once=4):
    default = sanitized_at_once if os.environ.get("HEARTWHEEL_SANITIZE") else 8
    return max(1, int(os.environ.get("HEARTWHEEL_E2E_JOBS", default)))


def _in_process(names, module):
    loader = unittest.defaultTestLoader
    suite = loader.loadTestsFromNames(names, module) if names else loader.loadTestsFromModule(module)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    return 0 if result.wasSuccessful() else 1


def _groups(names, module):
    """[[name, ...] per class]: `names` grouped by class, in their order, or every class of `module`
    that has tests, those with the most tests first."""
    if names:
        groups = {}
        for n in names:
            groups.setdefault(n.split(".")[0], []).append(n)
        return list(groups.values())
    loader = unittest.defaultTestLoader
    classes = [(name, len(loader.getTestCaseNames(obj))) for name, obj in vars(module).items()
               if isinstance(obj, type) and issubclass(obj, unittest.TestCase) and loader.getTestCaseNames(obj)]
    # The suite takes as long as its last class to finish: the largest classes (their tests run one
    # after another) start first, so the longest does not start last (e2e_echo: 50 -> ~40 s).
    return [[name] for name, _ in sorted(classes, key=lambda c: -c[1])]


def main(script, names=None, module=None, sanitized_at_once=4):
    """The suite `script` (its __main__ calls this with __file__): `names` (default: every class of
    `module`, default __main__) run side by side, or what the command line names, here. A sanitized
    build runs at most `sanitized_at_once` classes at once."""
    module = module or sys.modules["__main__"]
    if len(sys.argv) > 1:
        sys.exit(_in_process(sys.argv[1:], module))
    at_once = jobs(sanitized_at_once)
    if at_once == 1:
        sys.exit(_in_process(names, module))
    groups = _groups(names, module)
    pending, running, failed = list(groups), [], []
    start = time.monotonic()
    while pending or running:
        while pending and len(running) < at_once:
            group = pending.pop(0)
            out = tempfile.TemporaryFile(mode="w+")
            proc = subprocess.Popen([sys.executable, script, *group], stdout=out, stderr=subprocess.STDOUT, text=True)
            running.append((group, proc, out, time.monotonic()))
        for entry in list(running):
            group, proc, out, began = entry
            if proc.poll() is None:
                continue
            running.remove(entry)
            out.seek(0)
            verdict = "ok" if proc.returncode == 0 else f"FAILED (exit {proc.returncode})"
            print(f"==== {' '.join(group)}: {verdict} in {time.monotonic() - began:.1f} s", flush=True)
            print(out.read(), flush=True)
            out.close()
            if proc.returncode != 0:
                failed.append(" ".join(group))
        time.sleep(0.05)
    print(f"==== {len(groups)} classes side by side in {time.monotonic() - start:.1f} s; "
          f"failed: {', '.join(failed) if failed else 'none'}", flush=True)
    sys.exit(1 if failed else 0)
