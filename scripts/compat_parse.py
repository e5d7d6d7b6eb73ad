"""The reading of scripts/compat's runs: the per-test results, set-up
errors and "Ran N" count of one `python3 -m test MODULE -v` output.

Owns the parsing of regrtest's verbose output alone; not running the
modules nor counting them into the table (scripts/compat,
compat_summary.py).
"""

import re

# "test_foo (test.test_os.Class.test_foo)" possibly followed by a docstring
# line, then " ... RESULT" (RESULT may come on a later line when the test
# printed something).
START_RE = re.compile(r"^([\w.]+) \(((?:test|unittest)\.[\w.]+)\)(.*)$")
RESULT_RE = re.compile(
    r"(?:^|\.\.\. )(ok|FAIL|ERROR|skipped(?: .*)?|expected failure|unexpected success)\s*$"
)
# Summary blocks after the run: "FAIL: test_foo (test.test_os.Class.test_foo)"
# or "ERROR: setUpClass (test.test_os.Class)".
SUMMARY_RE = re.compile(r"^(FAIL|ERROR|UNEXPECTED SUCCESS): (\w+) \(([\w.]+)\)")
RAN_RE = re.compile(r"^Ran (\d+) tests? in")


def classify(word):
    if word == "ok" or word == "expected failure":
        return "pass"
    if word.startswith("skipped"):
        return "skip"
    return "fail"


def parse(output):
    """Per-test results from `python -m test -v` output: {test id: status},
    plus the set-up errors (class or module level) and unittest's Ran count."""
    results = {}
    details = {}  # test id -> the raw result word, for skips ("skipped 'why'")
    setup_errors = set()
    ran = None
    current = None
    for line in output.splitlines():
        m = START_RE.match(line)
        if m:
            name, ident, rest = m.groups()
            # unittest prints "name (module.Class.name)"; regrtest on 3.11 keeps
            # the method name at the end of ident.
            current = ident if ident.endswith("." + name) else ident + "." + name
            r = RESULT_RE.search(rest)
            if r:
                record(results, details, current, r.group(1))
                current = None
            continue
        if current is not None:
            r = RESULT_RE.search(line)
            if r:
                record(results, details, current, r.group(1))
                current = None
                continue
        m = SUMMARY_RE.match(line)
        if m:
            kind, name, ident = m.groups()
            if name.startswith(("setUpClass", "tearDownClass", "setUpModule", "tearDownModule")):
                setup_errors.add(f"{name} ({ident})")
            else:
                tid = ident if ident.endswith("." + name) else ident + "." + name
                # a subtest failure of a test that otherwise reported ok
                results[tid] = "fail"
            continue
        m = RAN_RE.match(line)
        if m:
            ran = (ran or 0) + int(m.group(1))
    return results, details, sorted(setup_errors), ran


def record(results, details, tid, word):
    if tid not in results:
        results[tid] = classify(word)
        if word.startswith("skipped"):
            details[tid] = word
