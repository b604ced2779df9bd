#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""One guest's profile as a JSON object, for scripts/bench.sh (see scripts/guest/bench.sh).

    perf_summary.py SIDE VERSION WORKLOAD BASE [PROC]

BASE.sym, BASE.dso, BASE.chains: perf report's outputs; BASE.ips: the sampled addresses
(perf script -G -F ip); BASE.err: perf's errors. PROC (default /proc) holds the modules and
kallsyms files of the profiled kernel (scripts/run-tests.sh checks this on fixed inputs).
"""
import bisect, json, re, sys
side, vers, workload, base = sys.argv[1:5]
proc = sys.argv[5] if len(sys.argv) > 5 else "/proc"
out = {"profile": side, "vers": vers, "workload": workload}
rows = lambda f: [" ".join(l.split()) for l in open(base + f) if l.strip() and not l.startswith("#")]
m = re.search(r"^# Samples: (\S+)", open(base + ".sym").read(), re.M)
out["samples"] = m.group(1) if m else "?"
sym = rows(".sym")
out["top"] = [l for l in sym if float(l.split("%")[0]) >= 0.7][:20]
# The transport module's and sunrpc's shares and symbols, from the sampled addresses: perf
# without the modules' files (the guests boot on the host's root file system) leaves some module
# samples unresolved or under another DSO, so each address is placed here in its module
# (/proc/modules: name, size, load address) and at the text symbol at or below it (kallsyms).
spans = []
for l in open(proc + "/modules"):
    f = l.split()
    if len(f) >= 6 and f[5] != "0x0000000000000000":
        spans.append((int(f[5], 16), int(f[1]), f[0]))
spans.sort()
text = sorted((int(f[0], 16), f[2]) for f in (l.split() for l in open(proc + "/kallsyms"))
              if len(f) >= 3 and f[1] in "tT" and f[0] != "0000000000000000")
starts, taddr = [s[0] for s in spans], [t[0] for t in text]
ips = []
for l in open(base + ".ips"):
    try:
        ips.append(int(l.split()[0], 16))
    except (IndexError, ValueError):
        pass
# Samples per (module, symbol), and per module, the kernel proper or user space.
count, where = {}, {}
for ip in ips:
    i = bisect.bisect_right(starts, ip) - 1
    if i < 0 or ip >= spans[i][0] + spans[i][1]:
        w = "[kernel.vmlinux]" if ip >= 1 << 63 else "user space"
        where[w] = where.get(w, 0) + 1
        continue
    mod = spans[i][2]
    where["[%s]" % mod] = where.get("[%s]" % mod, 0) + 1
    j = bisect.bisect_right(taddr, ip) - 1
    key = (mod, text[j][1] if j >= 0 else hex(ip))
    count[key] = count.get(key, 0) + 1
pct = lambda n: 100.0 * n / len(ips) if ips else 0.0
def of(names):
    """The symbols of the modules `names` by share, and their total share."""
    picked = sorted(((n, m, s) for (m, s), n in count.items() if m in names), reverse=True)
    return ["%.2f%% [%s] [k] %s" % (pct(n), m, s) for n, m, s in picked], pct(sum(r[0] for r in picked))
# The transport module's own symbols: ours, or the C module's when it is the one profiled.
ours, out["ours_pct"] = of(("rpcrdma_rs", "rpcrdma"))
out["ours"] = ours[:12]
sun, out["sunrpc_pct"] = of(("sunrpc",))
out["sunrpc"] = sun[:10]
out["ips"] = len(ips)
# Each module's share by address (perf's DSO column puts some module samples under another
# module), the kernel's and user space's; perf's own DSO table if no address was read.
if ips:
    shares = sorted(((n, w) for w, n in where.items()), reverse=True)
    out["dso"] = ["%.2f%% %s" % (pct(n), w) for k, (n, w) in enumerate(shares)
                  if k < 8 or w in ("[rpcrdma_rs]", "[rpcrdma]")]
else:
    dso = rows(".dso")
    out["dso"] = dso[:8] + [l for l in dso[8:] if "[rpcrdma_rs]" in l or "[rpcrdma]" in l]
# The two heaviest call chains of each of the busiest symbols but idle's, 8 frames each.
chains, cur = [], None
for l in open(base + ".chains"):
    l = l.strip()
    if not l or l.startswith("#"):
        continue
    m = re.match(r"^([\d.]+%)\s+\[.\]\s+(\S+)$", l)
    if m:
        cur = m.group(2)
        n = 0
        continue
    if cur and "idle" not in cur and "halt" not in cur and n < 2 and len(chains) < 8:
        pct, _, chain = l.partition(" ")
        chains.append("%s %s" % (pct, ";".join(chain.split(";")[:8])))
        n += 1
out["chains"] = chains
if not out["top"]:
    e = open(base + ".err").read().strip().splitlines()
    out["error"] = "perf report: " + (e[-1] if e else "no samples")
print(json.dumps(out))
