"""What scripts/compat makes of its runs: the Markdown table's cells and
rows, the tests that pass on one side only, and the floor file
(tests/compat-floor.json: loaded, checked, only ever raised). `modules`
is the script's MODULES: each module's selection, and the full list the
total is comparable over.

Owns those summaries; not running the modules (scripts/compat) nor
parsing their output (compat_parse.py).
"""

import json

def cell(r):
    if r is None:
        return "–"
    if r.get("missing"):
        return "not shipped"
    s = f"{r['run']} / {r['failed']} / {r['skipped']}"
    if r["capped"]:
        s += " (capped)"
    return s


def table(summary, modules):
    lines = [
        "| module | native run / failed / skipped | supervised run / failed / skipped | passed native → supervised |",
        "|---|---:|---:|---:|",
    ]
    tot = {"native": [0, 0, 0, 0], "supervised": [0, 0, 0, 0]}
    for m in summary["modules"]:
        n = summary["native"].get(m)
        s = summary["supervised"].get(m)
        for side, r in (("native", n), ("supervised", s)):
            if r:
                t = tot[side]
                t[0] += r["run"]; t[1] += r["failed"]; t[2] += r["skipped"]; t[3] += r["passed"]
        pn = n["passed"] if n else "–"
        ps = s["passed"] if s else "–"
        subset = " (subset)" if modules[m].get("only") or modules[m].get("skip") else ""
        lines.append(f"| {m}{subset} | {cell(n)} | {cell(s)} | {pn} → {ps} |")
    tn, ts = tot["native"], tot["supervised"]
    lines.append(
        f"| **total** | {tn[0]} / {tn[1]} / {tn[2]} | {ts[0]} / {ts[1]} / {ts[2]} | {tn[3]} → {ts[3]} |"
    )
    return "\n".join(lines)


def both_sides(summary):
    """(module, native result, supervised result) for every module that
    ran on both sides, in the summary's order."""
    for m in summary["modules"]:
        n = summary["native"].get(m)
        s = summary["supervised"].get(m)
        if n and s:
            yield m, n, s


def differences(summary):
    """Tests that pass natively but not supervised: {module: {test: status}}."""
    diff = {}
    for m, n, s in both_sides(summary):
        d = {}
        for t, st in n["results"].items():
            if st != "pass":
                continue
            sst = s["results"].get(t)
            if sst == "pass":
                continue
            if sst is None:
                sst = "not run (module capped)" if s["capped"] else "not run"
            elif sst == "skip":
                sst = s.get("skip_reasons", {}).get(t, "skipped")
            d[t] = sst
        if d:
            diff[m] = d
    return diff


def gains(summary):
    """Tests that pass supervised but not natively: {module: {test: native status}}."""
    out = {}
    for m, n, s in both_sides(summary):
        d = {}
        for t, st in s["results"].items():
            if st == "pass" and n["results"].get(t) != "pass":
                nst = n["results"].get(t, "not run")
                d[t] = n.get("skip_reasons", {}).get(t, nst) if nst == "skip" else nst
        if d:
            out[m] = d
    return out


def load_floor(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return {"supervised_passed_total": 0, "modules": {}}


def check_floor(summary, path, modules):
    floor = load_floor(path)
    problems = []
    sup = summary["supervised"]
    total = sum(r["passed"] for r in sup.values())
    # The total is comparable only when every module ran (not with --modules).
    if set(sup) == set(modules) and total < floor.get("supervised_passed_total", 0):
        problems.append(
            f"supervised passed total {total} is below the floor {floor['supervised_passed_total']}"
        )
    for m, want in sorted(floor.get("modules", {}).items()):
        if m not in sup:
            continue  # not run this time (--modules)
        got = sup[m]["passed"]
        if got < want:
            problems.append(f"{m}: supervised passed {got} is below the floor {want}")
    return total, floor, problems


def update_floor(summary, path, modules):
    floor = load_floor(path)
    sup = summary["supervised"]
    total = sum(r["passed"] for r in sup.values())
    full = set(sup) == set(modules)
    mods = floor.setdefault("modules", {})
    for m, r in sup.items():
        mods[m] = max(mods.get(m, 0), r["passed"])
    if full:
        floor["supervised_passed_total"] = max(floor.get("supervised_passed_total", 0), total)
    floor["comment"] = (
        "Supervised tests passed by scripts/compat (CPython 3.11 regression suite). "
        "scripts/compat --check fails below these; --update-floor only raises them."
    )
    floor["updated"] = summary["date"]
    out = {"comment": floor.pop("comment"), "updated": floor.pop("updated"),
           "supervised_passed_total": floor.pop("supervised_passed_total", 0),
           "modules": dict(sorted(floor.pop("modules").items()))}
    out.update(floor)
    with open(path, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    return out
