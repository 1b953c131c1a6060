#!/usr/bin/env python3
"""Structural sameness of two results.json (before and after a change that
must not change behaviour): the run-wide config, datapaths, skipped points
and shape; per run, in order: the labels, every config key, the number of
repeats not re-run for a busy host, and the metric names measured.

Usage: python3 same.py BEFORE/results.json AFTER/results.json"""
import json, sys
def load(p): return json.load(open(p))
b, a = load(sys.argv[1]), load(sys.argv[2])
diffs = []
def cmp(what, x, y):
    if x != y: diffs.append(f"{what}: before {json.dumps(x)[:300]} | after {json.dumps(y)[:300]}")
cmp("set config", b.get("config"), a.get("config"))
cmp("datapaths", b.get("datapaths"), a.get("datapaths"))
cmp("skipped", b.get("skipped"), a.get("skipped"))
cmp("shape", b.get("shape"), a.get("shape"))
cmp("run count", len(b["runs"]), len(a["runs"]))
for i, (rb, ra) in enumerate(zip(b["runs"], a["runs"])):
    cmp(f"run {i} labels", rb["labels"], ra["labels"])
    cb = {k: v for k, v in (rb.get("config") or {}).items()}
    ca = {k: v for k, v in (ra.get("config") or {}).items()}
    for k in sorted(set(cb)|set(ca)):
        if cb.get(k)!=ca.get(k): diffs.append(f"run {i} config key {k}: before {cb.get(k)!r} after {ca.get(k)!r}")
    # repeats: count of repeats not marked busy (busy re-runs may add)
    nb = len([r for r in rb.get("repeats") or [] if not r.get("rerun")]); na = len([r for r in ra.get("repeats") or [] if not r.get("rerun")])
    if nb != na:
        diffs.append(f"run {i} {rb['labels']}: repeats before {nb} after {na} (busy re-runs?)")
    mb = sorted({k for r in rb.get("repeats") or [] for k in (r.get("metrics") or {})})
    ma = sorted({k for r in ra.get("repeats") or [] for k in (r.get("metrics") or {})})
    cmp(f"run {i} metric names {rb['labels']}", mb, ma)
# Summary: differences grouped by kind (a config key's values differ
# in N runs; anything else is listed whole).
import collections, re
kinds = collections.Counter()
other = []
for d in diffs:
    m = re.match(r"run \d+ config key (\S+):", d)
    if m: kinds[m.group(1)] += 1
    else: other.append(d)
print(f"{sys.argv[1]} vs {sys.argv[2]}: {len(b['runs'])} runs; {len(diffs)} differences")
for k, n in sorted(kinds.items()): print(f"  config key {k} differs in {n} runs")
for d in other: print("  " + d)
