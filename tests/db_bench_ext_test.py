#!/usr/bin/env python3
"""ctest db_bench_ext_test: db_bench_ext/db_bench_dlcbf and db_bench_ext/compare
on tiny workloads (well under a minute).

Usage: db_bench_ext_test.py <path to libdlcbf_plugin.so>

Asserts
  1. the dlcbf filter is really used through stock db_bench: wrapper exit 0,
     its verification passed, every SST names policy "dlcbf" and has a filter
     block, rocksdb.bloom.filter.useful > 0, the FPR is sane, no key lost;
  2. the unregistered-policy case fails loudly (nonzero exit + message):
     without the preload (pre-flight), with a bogus policy name, and with a
     user OPTIONS file run without the plugin (post-run verification: stock
     db_bench silently ran without a filter); a missing plugin is exit 2;
  3. the found-count check catches a shortfall (--expect_all_found);
  4. compare writes report.md, results.csv (and the PNGs when gnuplot is
     installed) and they parse: every configuration x workload row, numeric
     ops/sec, FPRs in [0, 1], dlcbf bits/key near 10, no false negatives.
Fails with a clear message when db_bench/sst_dump are missing (install
Debian's rocksdb-tools; tools/run.sh does).
"""
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
WRAPPER = os.path.join(REPO, "db_bench_ext", "db_bench_dlcbf")
COMPARE = os.path.join(REPO, "db_bench_ext", "compare")

failures = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg, flush=True)
    if not cond:
        failures.append(msg)
    return cond


def run(cmd, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors="replace", env=env)
    return p.returncode, p.stdout, p.stderr


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    plugin = os.path.abspath(sys.argv[1])
    for tool in ("db_bench", "sst_dump"):
        if shutil.which(tool) is None:
            print(f"FAIL: `{tool}` is not installed. db_bench_ext needs Debian's rocksdb-tools "
                  "(apt-get install rocksdb-tools; `tools/run.sh test` installs it).")
            return 1
    if not os.path.isfile(plugin):
        print(f"FAIL: plugin {plugin} does not exist (build target dlcbf_plugin)")
        return 1
    tmp = tempfile.mkdtemp(prefix="db_bench_ext_test.")
    try:
        py = sys.executable
        base = [py, WRAPPER, f"--plugin={plugin}"]
        small = ["--num=20000", "--key_size=16", "--value_size=64", "--write_buffer_size=262144",
                 "--compression_type=none", "--seed=7", "--statistics=1", "--threads=1"]

        # 1. the filter is really used --------------------------------------
        db = os.path.join(tmp, "db1")
        js = os.path.join(tmp, "s1.json")
        rc, out, err = run(base + ["--filter=dlcbf:10", f"--db={db}", f"--summary_json={js}",
                                   "--benchmarks=filluniquerandom,flush,readrandom,readmissing",
                                   "--histogram=1"] + small)
        check(rc == 0, f"wrapper --filter=dlcbf:10 exits 0 (got {rc}; stderr tail: "
                       f"{err[-300:]!r})")
        s = json.load(open(js)) if os.path.exists(js) else {}
        v = s.get("verification", {})
        check(v.get("ok") is True, f"wrapper verification ok: {v}")
        sst = s.get("sst", {})
        check(sst.get("files", 0) > 0 and set(sst.get("policies", {})) == {"dlcbf"}
              and sst.get("files_without_filter", 1) == 0,
              f"every SST carries filter policy 'dlcbf': {sst.get('policies')}")
        check(8.5 <= (sst.get("filter_bits_per_key") or 0) <= 12.5,
              f"dlcbf:10 filter bits/key {sst.get('filter_bits_per_key')} in [8.5, 12.5]")
        fs = s.get("filter_stats", {})
        check(fs.get("useful", 0) > 0, f"rocksdb.bloom.filter.useful > 0 ({fs.get('useful')})")
        check(fs.get("fpr") is not None and fs["fpr"] < 0.05, f"end-to-end FPR {fs.get('fpr')} < 5%")
        check(s.get("effective_filter_policy", "").startswith("dlcbf"),
              f"DB OPTIONS file says filter_policy={s.get('effective_filter_policy')}")
        b = {x["name"]: x for x in s.get("benchmarks", [])}
        rr, rm = b.get("readrandom", {}), b.get("readmissing", {})
        check(rr.get("read") == 20000 and rr.get("found") == 20000,
              f"readrandom after filluniquerandom: all found ({rr.get('found')} of {rr.get('read')})")
        check(rm.get("found") == 0, f"readmissing: none found ({rm.get('found')})")
        check(rr.get("ops_per_sec", 0) > 0 and "p99" in rr.get("histograms", {}).get("read", {}),
              "ops/sec and p99 parsed from db_bench output")
        check("verified:" in err, "wrapper prints what it verified")

        # 2. unregistered policy fails loudly ----------------------------------
        rc, out, err = run(base + ["--no_preload", "--filter=dlcbf:10",
                                   f"--db={os.path.join(tmp, 'db2')}",
                                   "--benchmarks=fillrandom", "--num=1000"])
        check(rc == 3 and "did NOT load filter policy" in err,
              f"without the preload: exit 3 + message (got {rc}: {err.strip()[-200:]!r})")
        rc, out, err = run(base + ["--filter=nosuchpolicy:10", f"--db={os.path.join(tmp, 'db3')}",
                                   "--benchmarks=fillrandom", "--num=1000"])
        check(rc == 3 and "nosuchpolicy" in err and "ERROR" in err,
              f"bogus policy name: exit 3 + message (got {rc})")
        # a user OPTIONS file naming dlcbf, run without the plugin: stock
        # db_bench silently runs with no filter; the post-run check catches it
        opt = os.path.join(tmp, "OPTIONS.user")
        rc, out, err = run(base + ["--filter=dlcbf:10", "--print_options",
                                   "--write_buffer_size=262144"])
        check(rc == 0 and "filter_policy=dlcbf:10" in out, "--print_options emits the OPTIONS file")
        with open(opt, "w") as f:
            f.write(out)
        js4 = os.path.join(tmp, "s4.json")
        rc, out, err = run(base + ["--no_preload", f"--options_file={opt}",
                                   f"--db={os.path.join(tmp, 'db4')}", f"--summary_json={js4}",
                                   "--benchmarks=fillrandom,flush,readrandom"] + small)
        check(rc == 3 and "FILTER NOT USED" in err and "filter_policy=nullptr" in err,
              f"user OPTIONS without plugin: post-run verification exit 3 (got {rc}: "
              f"{err.strip()[-300:]!r})")
        # a malformed dlcbf id stops before db_bench runs, with the parser's
        # own message and the accepted forms (not a blamed plugin)
        for bad, why in (("dlcbf:abc", 'bits_per_key: "abc"'), ("dlcbf:10:q3", 'unknown option "q3"')):
            rc, out, err = run(base + [f"--filter={bad}", f"--db={os.path.join(tmp, 'db-bad')}",
                                       "--benchmarks=fillrandom", "--num=1000"])
            check(rc == 2 and f"--filter={bad} is not a valid dlcbf filter id" in err and why in err
                  and "Accepted forms: dlcbf:<bits_per_key>" in err and "plugin" not in err.split("ERROR")[-1],
                  f"bad id {bad}: exit 2, parser message, accepted forms (got {rc}: {err.strip()[-300:]!r})")
            check(not os.path.exists(os.path.join(tmp, "db-bad")), f"bad id {bad}: db_bench never ran")
        env = dict(os.environ, DLCBF_PLUGIN=os.path.join(tmp, "missing.so"))
        rc, out, err = run([py, WRAPPER, "--filter=dlcbf:10", "--benchmarks=fillrandom"], env=env)
        check(rc == 2 and "plugin not found" in err, f"missing plugin: exit 2 + message (got {rc})")

        # 3. found-count check ----------------------------------------------------
        rc, out, err = run(base + ["--filter=bloomfilter:10", f"--db={os.path.join(tmp, 'db5')}",
                                   "--benchmarks=fillrandom,readrandom", "--expect_all_found",
                                   "--num=5000"])  # fillrandom leaves ~37% of keys unwritten
        check(rc == 4 and "NOT found" in err, f"--expect_all_found flags a shortfall (got {rc})")

        # 4. compare: report files exist and parse ----------------------------------
        outdir = os.path.join(tmp, "cmp")
        rc, out, err = run([py, COMPARE, f"--plugin={plugin}", "--num=6000",
                            "--configs=none,bloom,ribbon_eqbits,dlcbf,dlcbf_eqfpr", "--memtable_index=off",
                            "--settle=compact", "--filter_bench=off", "--repeats=2",
                            f"--out={outdir}",
                            f"--work={os.path.join(tmp, 'cmpwork')}", "--print=none"])
        check(rc == 0, f"compare exits 0 (got {rc}; {err.strip()[-400:]!r})")
        check(outdir in out, "compare names its output directory")
        rep = os.path.join(outdir, "report.md")
        csvp = os.path.join(outdir, "results.csv")
        check(os.path.exists(rep) and os.path.exists(csvp), "report.md and results.csv exist")
        if os.path.exists(rep):
            text = open(rep).read()
            check("| config" in text and "|---" in text and "dlcbf:10" in text
                  and "bloom:10" in text, "report.md has the Markdown summary table")
            check("Machine:" in text and "RocksDB:" in text and "AVX2" in text,
                  "report.md header: machine, RocksDB version, AVX2 note")
            check(re.search(r"Equal memory: ribbon=dlcbfBits \(ribbonfilter:15:-1\) [\d.]+ bits/key "
                            r"against dlcbf:10's [\d.]+", text) is not None,
                  "report.md: the equal-memory line (Ribbon's measured bits/key against dlcbf:10's)")
            check("2 interleaved rounds" in text and re.search(r"[\d,.]+[kM]? \([\d,.]+[kM]?-[\d,.]+[kM]?\)", text),
                  "report.md: rounds named, throughput as median (min-max)")
            # the IO-bound step ran (direct reads, cold small cache), or the
            # report says loudly why not (a filesystem without O_DIRECT)
            # (md_table pads right-aligned headers to the widest cell: on a
            # fast machine "123.4k (110.2k-135.6k)" is wider than the header)
            check("## IO-bound missing-key reads" in text and
                  (re.search(r"\|\s*readmissing-io ops/s\s*\|", text) is not None
                   or "readmissing-io) SKIPPED" in text),
                  "report.md: the IO-bound table (or the reason it was skipped)")
        if os.path.exists(csvp):
            rows = list(csv.DictReader(open(csvp)))
            cfgs = {r["config"] for r in rows}
            # 7 workloads, 8 with the IO-bound step (skipped, with a note, on a
            # filesystem without O_DIRECT)
            n_wl = 8 if any(r["workload"] == "readmissing-io" for r in rows) else 7
            check(len(cfgs) == 5 and len(rows) == 2 * 5 * n_wl,
                  f"results.csv: 2 rounds x 5 configs x {n_wl} workloads "
                  f"({len(cfgs)} configs, {len(rows)} rows)")
            check({r["rep"] for r in rows} == {"1", "2"}, "results.csv: column rep holds 1 and 2")
            ok_ops = all(float(r["ops_per_sec"]) > 0 for r in rows)
            check(ok_ops, "every row has a positive ops_per_sec")
            fprs = [float(r["fpr"]) for r in rows if r["fpr"]]
            check(fprs and all(0 <= f <= 1 for f in fprs), f"{len(fprs)} FPR values in [0, 1]")
            check(all((r["false_negatives"] or "0") == "0" for r in rows), "no false negatives")
            dl = [r for r in rows if r["config"] == "dlcbf:10" and r["workload"] == "load"]
            check(dl and 8.5 <= float(dl[0]["filter_bits_per_key"]) <= 12.5,
                  "dlcbf:10 bits/key from SST properties near 10")
            eq = [r for r in rows if r["filter"].startswith("dlcbf:fpr")]
            check(bool(eq), "the equal-FPR configuration ran (dlcbf:fpr<bloom's FPR>)")
        pngs = ("throughput.png", "fpr_vs_bits.png", "bits_per_key.png")
        if shutil.which("gnuplot"):
            for png in pngs:
                p = os.path.join(outdir, png)
                ok = os.path.exists(p) and open(p, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
                check(ok, f"{png} is a PNG")
        else:
            # Not silent: without gnuplot, compare must say so and write no
            # plot; the PNG contents are then unchecked (install gnuplot-nox).
            print("NOTE: gnuplot not installed: PNG contents NOT checked (apt-get install gnuplot-nox)")
            check("gnuplot not found" in out
                  and not any(os.path.exists(os.path.join(outdir, png)) for png in pngs),
                  "without gnuplot, compare reports it and writes no PNG")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"\n{len(failures)} check(s) FAILED")
        return 1
    print("\nall checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
