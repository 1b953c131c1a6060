#!/usr/bin/env python3
"""lab-vs-real-tables.py CNIBENCH OUTDIR: the tables of docs/findings.md section 12 from
lab-vs-real.sh's results, through `cnibench compare --format json` (medians, Mann-Whitney p).

Verdict rule, fixed before the measurement:
- direct (real vs lab, same tests, wire and MTU): "≈" when the difference is not significant
  (p > 0.05, n = 5 against 5: "not shown", not "equal"), else the change in percent;
- ratio to the node-to-node baseline of the same file (lab: model / baseline; cluster: CNI /
  node-to-node): each side "+x %" or "−x %" when significant, "≈" otherwise; the model
  *predicts the ratio* when both sides say the same (both ≈, or both significant with one sign).
"""
import json, subprocess, sys, os

BIN, OUT = sys.argv[1], sys.argv[2]
PAIRS = [("bridge", "flannel-host-gw"), ("vxlan", "flannel-vxlan"),
         ("veth-routing", "cilium-native-legacy"), ("ebpf-host-routing", "cilium-native")]
CELLS = [(t, f) for t in ("tcp_stream", "tcp_rr", "tcp_crr") for f in ("1", "8")]
METRIC = {"tcp_stream": "throughput_bits_per_sec", "tcp_rr": "trans_per_sec", "tcp_crr": "trans_per_sec"}


def compare(*args):
    out = subprocess.run([BIN, "compare", "--format", "json", *args], check=True, capture_output=True, text=True).stdout
    rows = {}
    for tb in json.loads(out)["tables"]:
        for r in tb["rows"]:
            l = r["labels"]
            for c in r["compared"]:
                key = (tb["metric"], l.get("test"), l.get("flows"), l.get("path"))
                rows[key] = (r["base"], c)
    return rows


def fmt(v, metric):
    if metric == "throughput_bits_per_sec":
        return f"{v / 1e9:.1f} G"
    return f"{v / 1e3:.1f} k" if v >= 1e4 else f"{v:.0f}"


def change(c):
    if not c["significant"]:
        return f"≈ (p={c['p']:.2f})"
    return f"{c['delta_pct']:+.0f} % (p={c['p']:.3f})"


def sign(c):
    return "≈" if not c["significant"] else ("+" if c["delta_pct"] > 0 else "−")


def res(d):
    return os.path.join(OUT, d, "results.json")


for model, cni in PAIRS:
    if not (os.path.exists(res(f"lab-{model}")) and os.path.exists(res(f"k8s-{cni}"))):
        continue
    direct = compare("--match", "path,test,flows", res(f"lab-{model}"), res(f"k8s-{cni}"))
    labr = compare("--by", "datapath", res(f"lab-{model}"))
    k8sr = compare("--by", "datapath", res(f"k8s-{cni}"))
    print(f"\n#### lab `{model}` ↔ real `{cni}`\n")
    print("| path | test | lab | real | real vs lab | lab / baseline | real / node-to-node | ratio predicted |")
    print("|---|---|---:|---:|---|---|---|---|")
    agree = total = 0
    for path in ("node-to-node", "cross-node", "same-node"):
        for t, f in CELLS:
            m = METRIC[t]
            d = direct.get((m, t, f, path))
            if not d:
                continue
            base, c = d
            lr = labr.get((m, t, f, path)); kr = k8sr.get((m, t, f, path))
            if path == "node-to-node":
                lcell = kcell = pred = "—"
            elif lr and kr:
                lcell, kcell = change(lr[1]), change(kr[1])
                ok = sign(lr[1]) == sign(kr[1]); agree += ok; total += 1
                pred = "yes" if ok else "**no**"
            else:
                lcell = kcell = pred = "—"
            print(f"| {path} | {t} ×{f} | {fmt(base['median'], m)} | {fmt(c['summary']['median'], m)} | {change(c)} | {lcell} | {kcell} | {pred} |")
    print(f"\nratio predicted in {agree} of {total} cells")

# seed 000: eBPF host routing against legacy host routing, on the real agent and in the lab
for title, a, b in (("real Cilium: legacy → eBPF host routing", "k8s-cilium-native-legacy", "k8s-cilium-native"),
                    ("lab: veth-routing → ebpf-host-routing", "lab-veth-routing", "lab-ebpf-host-routing")):
    if not (os.path.exists(res(a)) and os.path.exists(res(b))):
        continue
    rows = compare("--match", "path,test,flows", "--metrics", "throughput_bits_per_sec,trans_per_sec,cpu_pct_per_100gbit,cpu_us_per_trans", res(a), res(b))
    print(f"\n#### {title}\n")
    print("| path | test | metric | legacy | eBPF | change |")
    print("|---|---|---|---:|---:|---|")
    for path in ("node-to-node", "cross-node", "same-node"):
        for t, f in CELLS:
            for m in (METRIC[t], "cpu_pct_per_100gbit") if t == "tcp_stream" else (METRIC[t], "cpu_us_per_trans"):
                d = rows.get((m, t, f, path))
                if not d:
                    continue
                base, c = d
                v = {"cpu_pct_per_100gbit": lambda x: f"{x:.0f} %", "cpu_us_per_trans": lambda x: f"{x:.1f} µs"}.get(m, lambda x: fmt(x, m))
                print(f"| {path} | {t} ×{f} | {m} | {v(base['median'])} | {v(c['summary']['median'])} | {change(c)} |")
