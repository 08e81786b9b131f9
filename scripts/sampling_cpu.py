#!/usr/bin/env python3
"""sampling_cpu.py -- tok/s of sampling methods in process CPU time, for a loaded machine.

`arbor run` stores wall times; on a shared machine they measure the other jobs as much as
the method. This runs every (method, sampling setting) of a config in its own `arbor run`
process (its own database under --out), charges it the CPU time the process used
(getrusage of the child: user + system, model and head loading included, the same for every
method but the heads file), and prints one markdown row per method and setting: tau
(generated tokens / target calls, pooled over prompts), tokens, CPU seconds, CPU tok/s and its
ratio to the AR row of the same setting, and the wall-clock tok/s for reference.

    scripts/sampling_cpu.py configs/dte-eagle.json --out results/dte-eagle-cpu --threads 1
    scripts/sampling_cpu.py configs/dte-eagle.json --out /tmp/x --limit 2 --only AR,Traversal-1-0-2

Use --threads 1: with more threads the CPU time counts spinning workers too.
"""
import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config")
    ap.add_argument("--out", required=True, help="directory for the per-cell configs and databases")
    ap.add_argument("--arbor", default="build-release/harness/arbor")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--limit", type=int, default=0, help="prompts per dataset (0: the config's)")
    ap.add_argument("--only", default="", help="comma-separated method ids (default: all)")
    ap.add_argument("--settings", default="", help="comma-separated setting indices into `sampling` (default: all)")
    ap.add_argument("--no-nice", action="store_true", help="run at normal priority (CPU time is the figure either way)")
    a = ap.parse_args()
    with open(a.config) as f:
        cfg = json.load(f)
    os.makedirs(a.out, exist_ok=True)
    sampling = cfg.get("sampling", [{"temperature": 0}])
    sampling = sampling if isinstance(sampling, list) else [sampling]
    pick = [int(x) for x in a.settings.split(",")] if a.settings else range(len(sampling))
    only = set(a.only.split(",")) if a.only else None
    rows = []
    for si in pick:
        s = sampling[si]
        for m in cfg["methods"]:
            if only and m["id"] not in only:
                continue
            cell = dict(cfg, name=cfg["name"], methods=[m], sampling=[s])
            tag = "%s.s%d" % (m["id"], si)
            cpath, db = os.path.join(a.out, tag + ".json"), os.path.join(a.out, tag + ".db")
            with open(cpath, "w") as f:
                json.dump(cell, f, indent=1)
            for p in (db, db + "-wal", db + "-shm"):
                if os.path.exists(p):
                    os.remove(p)
            cmd = ([] if a.no_nice else ["nice"]) + [a.arbor, "run", cpath, "--db", db, "--threads", str(a.threads), "--quiet"]
            if a.limit:
                cmd += ["--limit", str(a.limit)]
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            rc = subprocess.call(cmd)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            if rc:
                sys.exit("sampling_cpu: %s failed (exit %d)" % (" ".join(cmd), rc))
            cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
            con = sqlite3.connect(db)
            n_gen, n_calls, wall_us = con.execute("SELECT SUM(n_gen), SUM(n_calls), SUM(wall_us) FROM prompts").fetchone()
            con.close()
            rows.append((m["id"], si, s, n_gen / n_calls, n_gen, cpu, n_gen / cpu, n_gen / (wall_us / 1e6)))
            print("%s setting %d: tau %.3f, %d tokens, %.1f s CPU" % (m["id"], si, n_gen / n_calls, n_gen, cpu),
                  file=sys.stderr, flush=True)
    print("| method | T | top_p | tau | tokens | CPU s | tok/s (CPU) | vs AR (CPU) | tok/s (wall) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mid, si, s, tau, n, cpu, tps, wtps in rows:
        ar = [r for r in rows if r[1] == si and r[0] == "AR"]
        ratio = "%.2fx" % (tps / ar[0][6]) if ar else "-"
        print("| %s | %g | %g | %.3f | %d | %.1f | %.1f | %s | %.1f |" % (
            mid, s.get("temperature", 0), s.get("top_p", 1), tau, n, cpu, tps, ratio, wtps))


if __name__ == "__main__":
    main()
