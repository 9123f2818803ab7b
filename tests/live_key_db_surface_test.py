#!/usr/bin/env python3
"""LiveKeyDB's write surface follows RocksDB's: a test that reads the headers.

rocksdb::StackableDB forwards every call to the wrapped DB. A call that
writes, ingests, imports or drops data and that LiveKeyDB does not override
goes straight to the base DB, and the keys it writes are never indexed:
reads of them answer NotFound. RocksDB keeps adding such calls (PutEntity
with AttributeGroups in 8.9, two-phase ingestion in 11.5), so a list of
overrides kept by hand drifts.

This test preprocesses include/dlcbf/rocksdb/live_key_db.h against the
RocksDB headers the build compiles with (so LiveKeyDB's version guards are
resolved exactly as the compiler resolves them), lists every virtual call
StackableDB declares, and fails for each one that LiveKeyDB neither
overrides (same name and parameter types) nor lists in PASS_THROUGH below,
the calls that cannot make a key live (reads, metadata, flush and
compaction control, file deletions that can only remove keys). So a new
RocksDB call of any name fails this test until someone decides which it is.

Two more surfaces are checked the same way: every virtual call of
rocksdb::Transaction reaches the transaction under LiveKeyDB's wrapper
(transactions.cc), and every virtual call of rocksdb::Iterator reaches
RocksDB's iterator under LiveKeyDB's (live_iterator.cc).

Usage: live_key_db_surface_test.py --rocksdb-include DIR [--cxx CXX]
       [--std c++17|c++20] [--project-root DIR]
Runs under ctest against the RocksDB the build uses, and under
`tools/run.sh rocksdb-source` against each verified release's headers.
"""
import argparse
import os
import re
import subprocess
import sys
import unittest

# Calls that StackableDB forwards and that LiveKeyDB may leave to it: none
# can make a key live behind the index. Reads that the index does not serve
# (iterators, snapshots, properties) are here too: they only bypass it.
# Removals of whole files (DeleteFile, DeleteFilesInRanges) can make older
# versions of their keys visible again; LiveKeyDB's world watch
# (filter_policy/rocksdb/live_key_db/world_watch.h) detects each one as a
# change it cannot account for: reads bypass the indexes until they are
# rebuilt. CompactFiles is overridden (RocksDB reports no compaction
# events for it).
PASS_THROUGH = {
    # reads the index does not serve (see live_key_db.h, "Contract")
    "GetEntity": "read (the WideColumns form is overridden; others bypass the index)",
    "GetEntityFromBatchAndDB": "read",
    "MultiGetEntity": "read (bypasses the index)",
    "MultiGetEntityFromBatchAndDB": "read",
    "GetMergeOperands": "read (bypasses the index)",
    "NewIterator": "read (overridden: with live-region counts a Seek is planned from them; never makes a key live)",
    "NewIterators": "read (overridden as NewIterator)",
    "NewCoalescingIterator": "read",
    "NewAttributeGroupIterator": "read",
    "NewMultiScan": "read",
    "GetSnapshot": "snapshot",
    "ReleaseSnapshot": "snapshot",
    "GetTimestampedSnapshots": "snapshot",
    "GetTimestampedSnapshot": "snapshot",
    "GetLatestTimestampedSnapshot": "snapshot",
    "CreateTimestampedSnapshot": "snapshot",
    "ReleaseTimestampedSnapshotsOlderThan": "snapshot",
    "GetProperty": "metadata",
    "GetMapProperty": "metadata",
    "GetIntProperty": "metadata",
    "GetAggregatedIntProperty": "metadata",
    "GetApproximateSizes": "metadata",
    "GetApproximateMemTableStats": "metadata",
    "GetPropertiesOfAllTables": "metadata",
    "GetPropertiesOfTablesInRange": "metadata",
    "GetPropertiesOfTablesByLevel": "metadata",
    "GetColumnFamilyMetaData": "metadata",
    "GetAllColumnFamilyMetaData": "metadata",
    "GetLiveFilesMetaData": "metadata",
    "GetLiveFiles": "metadata",
    "GetLiveFilesChecksumInfo": "metadata",
    "GetLiveFilesStorageInfo": "metadata",
    "GetSortedWalFiles": "metadata",
    "GetCurrentWalFile": "metadata",
    "GetCreationTimeOfOldestFile": "metadata",
    "GetUpdatesSince": "reads the WAL",
    "GetLatestSequenceNumber": "metadata",
    "GetDbIdentity": "metadata",
    "GetDbSessionId": "metadata",
    "GetFullHistoryTsLow": "metadata",
    "GetNewestUserDefinedTimestamp": "metadata",
    "GetPreparedFileInfoForExternalSstIngestion": "metadata of a live file (the ingestion itself is overridden)",
    "GetName": "metadata",
    "GetEnv": "metadata",
    "GetFileSystem": "metadata",
    "GetOptions": "metadata",
    "GetDBOptions": "metadata",
    "DefaultColumnFamily": "metadata",
    "GetRootDB": "the base DB (documented: never write through it)",
    "GetBaseDB": "the base DB (documented: never write through it)",
    "ResetStats": "statistics",
    "NumberLevels": "metadata",
    "MaxMemCompactionLevel": "metadata",
    "Level0StopWriteTrigger": "metadata",
    "VerifyChecksum": "verification",
    "VerifyFileChecksums": "verification",
    "GetStatsHistory": "metadata",
    "NewDefaultReplayer": "tracing (replays through the base DB: documented unsupported)",
    "StartTrace": "tracing",
    "EndTrace": "tracing",
    "StartIOTrace": "tracing",
    "EndIOTrace": "tracing",
    "StartBlockCacheTrace": "tracing",
    "EndBlockCacheTrace": "tracing",
    # flush, compaction and background control: they move keys between
    # levels; a compaction filter may remove keys (stale entries only)
    "Flush": "moves keys, adds none",
    "FlushWAL": "durability",
    "SyncWAL": "durability",
    "LockWAL": "durability",
    "UnlockWAL": "durability",
    "CompactRange": "moves or removes keys (stale entries only)",
    "SuggestCompactRange": "compaction hint",
    "PauseBackgroundWork": "background control",
    "ContinueBackgroundWork": "background control",
    "EnableAutoCompaction": "background control",
    "DisableManualCompaction": "background control",
    "EnableManualCompaction": "background control",
    "AbortAllCompactions": "background control",
    "ResumeAllCompactions": "background control",
    "WaitForCompact": "background control",
    "SetOptions": "options",
    "SetDBOptions": "options",
    "IncreaseFullHistoryTsLow": "timestamps (indexed families have none)",
    "EnableFileDeletions": "file control",
    "DisableFileDeletions": "file control",
    "SetPreserveDeletesSequenceNumber": "file control",
    "PromoteL0": "moves files between levels",
    "DeleteFile": "may uncover older versions: the world watch detects it (indexes rebuilt)",
    "DeleteFilesInRanges": "may uncover older versions: the world watch detects it (indexes rebuilt)",
    "TryCatchUpWithPrimary": "secondary instances only",
    "NewSequenceNumber": "metadata",
    "ApproximateKeyAnchors": "metadata",
}

# Calls LiveKeyDB must override whatever PASS_THROUGH says: a guard for the
# list itself (a write call moved there by mistake fails here).
MUST_OVERRIDE = {
    "Put", "PutEntity", "Merge", "Delete", "SingleDelete", "DeleteRange", "Write",
    "IngestExternalFile", "IngestExternalFiles", "PrepareFileIngestion",
    "CommitFileIngestionHandles", "CreateColumnFamilyWithImport", "ClipColumnFamily",
    "CreateColumnFamily", "CreateColumnFamilies", "DropColumnFamily",
    "DropColumnFamilies", "Close", "Resume",
}

TYPE_WORDS = {"int", "long", "short", "char", "bool", "double", "float", "unsigned",
              "signed", "size_t", "uint64_t", "uint32_t", "int64_t", "int32_t", "void"}


def preprocess(cxx, std, include_dirs, header):
    src = '#include "%s"\n' % header
    cmd = [cxx, "-E", "-P", "-std=" + std, "-x", "c++", "-"]
    for d in include_dirs:
        cmd += ["-I", d]
    r = subprocess.run(cmd, input=src, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("preprocessing failed: %s\n%s" % (" ".join(cmd), r.stderr[-3000:]))
    return r.stdout


def class_body(text, pattern):
    m = re.search(pattern, text)
    if not m:
        raise RuntimeError("class not found: " + pattern)
    i = text.index("{", m.end() - 1)
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1:j]
    raise RuntimeError("unbalanced class body: " + pattern)


def split_members(body):
    """Top-level member declarations; function bodies dropped."""
    out, cur, i, paren = [], [], 0, 0
    while i < len(body):
        c = body[i]
        if c == "(":
            paren += 1
        elif c == ")":
            paren -= 1
        if c == "{" and paren == 0:
            depth = 0
            while i < len(body):  # skip the body
                if body[i] == "{":
                    depth += 1
                elif body[i] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                i += 1
            out.append("".join(cur))
            cur = []
        elif c == ";" and paren == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    return out


def split_top(s, sep=","):
    parts, cur, depth = [], [], 0
    for c in s:
        if c in "(<[":
            depth += 1
        elif c in ")>]":
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return parts


def norm_type(p):
    p = split_top(p, "=")[0].strip()  # default value
    p = re.sub(r"\b(rocksdb|ROCKSDB_NAMESPACE)::", "", p)
    p = re.sub(r"\b(class|struct)\s+", "", p)  # elaborated type specifiers
    p = re.sub(r"\s+", " ", p)
    m = re.match(r"^(.*[\s*&>])([A-Za-z_]\w*)$", p)
    if m and m.group(1).strip() and m.group(2) not in TYPE_WORDS:
        p = m.group(1).strip()
    if "*" not in p and "&" not in p:
        p = re.sub(r"^const ", "", p)
    return re.sub(r"\s*([*&<>,:])\s*", r"\1", p).strip()


def methods(body):
    """{signature: declaration} of the virtual / override methods."""
    out = {}
    for d in split_members(body):
        d = re.sub(r"\b(public|protected|private)\s*:", " ", d)
        d = re.sub(r"\[\[[^\]]*\]\]", " ", d).strip()
        if not d or d.startswith(("using ", "friend ", "typedef ", "template")):
            continue
        if "(" not in d:
            continue
        head, rest = d.split("(", 1)
        name_m = re.search(r"(~?\w+)\s*$", head)
        if not name_m:
            continue
        name = name_m.group(1)
        # the parameter list: up to the matching ')'
        depth, k = 1, 0
        while k < len(rest) and depth:
            if rest[k] == "(":
                depth += 1
            elif rest[k] == ")":
                depth -= 1
            k += 1
        params, tail = rest[:k - 1], rest[k:]
        if not (re.search(r"\bvirtual\b", head) or re.search(r"\boverride\b|\bfinal\b", tail)):
            continue
        types = [norm_type(p) for p in split_top(params) if p.strip() and p.strip() != "void"]
        const = " const" if re.match(r"\s*const\b", tail) else ""
        out["%s(%s)%s" % (name, ", ".join(types), const)] = re.sub(r"\s+", " ", d)
    return out


def surface(text):
    stackable = methods(class_body(text, r"class\s+StackableDB\s*:\s*public\s+DB\s*\{"))
    live = methods(class_body(text, r"class\s+LiveKeyDB\s*:\s*public\s+rocksdb::StackableDB\s*\{"))
    return stackable, live


def problems(stackable, live, pass_through=PASS_THROUGH):
    """Human-readable failures: forwarded calls LiveKeyDB must override."""
    out = []
    for sig in sorted(stackable):
        name = sig.split("(", 1)[0]
        if sig in live or name.startswith("~"):
            continue
        if name in pass_through and name not in MUST_OVERRIDE:
            continue
        out.append("StackableDB forwards %s to the base DB and LiveKeyDB does not override it: "
                   "override it (a call that writes, ingests, imports or drops data) or, if it "
                   "can never make a key live, add '%s' to PASS_THROUGH with the reason" % (sig, name))
    for name in sorted(set(pass_through) & MUST_OVERRIDE):
        out.append("PASS_THROUGH names %s, which writes data" % name)
    return out


ARGS = None


class SurfaceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        root = ARGS.project_root
        cls.text = preprocess(ARGS.cxx, ARGS.std, [ARGS.rocksdb_include, os.path.join(root, "include")],
                              "dlcbf/rocksdb/live_key_db.h")
        cls.stackable, cls.live = surface(cls.text)
        m = re.search(r"ROCKSDB_MAJOR\s*=\s*(\d+)", cls.text)
        cls.version = None
        with open(os.path.join(ARGS.rocksdb_include, "rocksdb", "version.h")) as f:
            v = dict(re.findall(r"#define ROCKSDB_(MAJOR|MINOR|PATCH) (\d+)", f.read()))
            cls.version = "%s.%s.%s" % (v["MAJOR"], v["MINOR"], v["PATCH"])

    def test_parser_sees_the_surface(self):
        # The parser must find what every release since 7.x declares, or it
        # would pass vacuously.
        names = {s.split("(", 1)[0] for s in self.stackable}
        for n in ("Put", "Delete", "Write", "IngestExternalFiles", "NewIterator", "GetProperty"):
            self.assertIn(n, names, "StackableDB's %s not parsed (RocksDB %s)" % (n, self.version))
        self.assertGreater(len(self.stackable), 60)
        self.assertIn("Write(const WriteOptions&, WriteBatch*)", self.live)
        print("RocksDB %s: StackableDB forwards %d virtual calls; LiveKeyDB overrides %d of them"
              % (self.version, len(self.stackable), len(set(self.stackable) & set(self.live))))

    def test_every_write_call_is_overridden(self):
        bad = problems(self.stackable, self.live)
        self.assertEqual(bad, [], "RocksDB %s:\n  " % self.version + "\n  ".join(bad))

    def test_negative_control_a_missing_override_is_caught(self):
        # Drop one real override (Write) and one whole name (every Put
        # overload): the check must name each.
        live = {k: v for k, v in self.live.items()
                if k != "Write(const WriteOptions&, WriteBatch*)" and not k.startswith("Put(")}
        bad = "\n".join(problems(self.stackable, live))
        self.assertIn("forwards Write(const WriteOptions&, WriteBatch*)", bad)
        self.assertIn("forwards Put(", bad)
        # ... and a write call slipped into PASS_THROUGH.
        self.assertIn("PASS_THROUGH names Merge",
                      "\n".join(problems(self.stackable, self.live, dict(PASS_THROUGH, Merge="oops"))))

    def test_negative_control_an_unknown_call_is_caught(self):
        # A call RocksDB might add tomorrow, under a new name.
        stackable = dict(self.stackable)
        stackable["AppendRows(const WriteOptions&, ColumnFamilyHandle*, const Slice&)"] = "new"
        self.assertIn("forwards AppendRows(", "\n".join(problems(stackable, self.live)))


# Transaction calls the wrapper of LiveKeyDB's transaction routes
# (filter_policy/rocksdb/live_key_db/transactions.cc, IndexedTransaction)
# may leave to rocksdb::Transaction's own default: RocksDB's internals
# (protected), nothing a user's transaction reaches.
TXN_LEFT_TO_BASE = {
    "SetId": "protected: RocksDB's transaction DB sets its own transaction's id",
    "GetLastLogNumber": "protected, internal to RocksDB's two-phase commit",
    "GetImpl": "protected (RocksDB >= 8.10): the implementation hook of RocksDB's own transactions' Get, "
               "which the wrapper's Get forwards",
}


def txn_problems(base, wrapper, left=TXN_LEFT_TO_BASE):
    """Virtual calls of rocksdb::Transaction the wrapper does not forward:
    on the wrapper they would run Transaction's default (NotSupported, or
    the wrapper's own empty state) instead of the transaction's."""
    out = []
    for sig in sorted(base):
        name = sig.split("(", 1)[0]
        if sig in wrapper or name.startswith("~") or name in left:
            continue
        out.append("rocksdb::Transaction declares %s and IndexedTransaction does not forward it: forward it "
                   "(transactions.cc), or list it in TXN_LEFT_TO_BASE with the reason" % sig)
    return out


class TransactionSurfaceTest(unittest.TestCase):
    """Every virtual call of rocksdb::Transaction reaches the wrapped
    transaction (a missing pure virtual fails the build; a call with a
    default body would silently run that default on the wrapper)."""

    @classmethod
    def setUpClass(cls):
        root = ARGS.project_root
        text = preprocess(ARGS.cxx, ARGS.std, [ARGS.rocksdb_include, os.path.join(root, "include"), root],
                          "filter_policy/rocksdb/live_key_db/transactions.cc")
        cls.base = methods(class_body(text, r"class\s+Transaction\s*\{"))
        cls.wrapper = methods(class_body(text, r"class\s+IndexedTransaction\s*:\s*public\s+Transaction\s*\{"))

    def test_parser_sees_the_surface(self):
        names = {s.split("(", 1)[0] for s in self.base}
        for n in ("Commit", "Prepare", "Get", "GetForUpdate", "MultiGet", "Put", "Rollback"):
            self.assertIn(n, names)
        self.assertGreater(len(self.base), 60)
        print("rocksdb::Transaction: %d virtual calls; IndexedTransaction forwards %d"
              % (len(self.base), len(set(self.base) & set(self.wrapper))))

    def test_every_call_is_forwarded(self):
        bad = txn_problems(self.base, self.wrapper)
        self.assertEqual(bad, [], "\n  ".join(bad))

    def test_negative_control_a_missing_forward_is_caught(self):
        wrapper = {k: v for k, v in self.wrapper.items() if not k.startswith("GetRangeLock(")}
        self.assertIn("declares GetRangeLock(", "\n".join(txn_problems(self.base, wrapper)))


def iterator_problems(base, wrapper):
    """Virtual calls of rocksdb::Iterator (and IteratorBase) LiveKeyDB's
    iterator does not override: on it they would run Iterator's default
    (an empty columns(), no Refresh, no Prepare) instead of RocksDB's
    iterator's."""
    out = []
    for sig in sorted(base):
        if sig in wrapper or sig.split("(", 1)[0].startswith("~"):
            continue
        out.append("rocksdb::Iterator declares %s and LiveIterator (live_iterator.cc) does not override it: "
                   "forward it to RocksDB's iterator (and decide whether a planned Seek changes it)" % sig)
    return out


class IteratorSurfaceTest(unittest.TestCase):
    """Every virtual call of rocksdb::Iterator reaches RocksDB's iterator
    under LiveKeyDB's (live_iterator.cc, LiveIterator)."""

    @classmethod
    def setUpClass(cls):
        root = ARGS.project_root
        text = preprocess(ARGS.cxx, ARGS.std, [ARGS.rocksdb_include, os.path.join(root, "include"), root],
                          "filter_policy/rocksdb/live_key_db/live_iterator.cc")
        cls.base = methods(class_body(text, r"class\s+Iterator\s*:\s*public\s+(?:IteratorBase|Cleanable)\s*\{"))
        if re.search(r"class\s+IteratorBase\s*:\s*public\s+Cleanable\s*\{", text):  # RocksDB >= 9.x
            cls.base.update(methods(class_body(text, r"class\s+IteratorBase\s*:\s*public\s+Cleanable\s*\{")))
        cls.wrapper = methods(class_body(text, r"class\s+LiveIterator\s*:\s*public\s+rocksdb::Iterator\s*\{"))

    def test_parser_sees_the_surface(self):
        names = {s.split("(", 1)[0] for s in self.base}
        for n in ("Seek", "SeekForPrev", "Next", "Prev", "key", "value", "status", "Refresh", "GetProperty"):
            self.assertIn(n, names)
        print("rocksdb::Iterator: %d virtual calls; LiveIterator overrides %d"
              % (len(self.base), len(set(self.base) & set(self.wrapper))))

    def test_every_call_is_forwarded(self):
        bad = iterator_problems(self.base, self.wrapper)
        self.assertEqual(bad, [], "\n  ".join(bad))

    def test_negative_control_a_missing_forward_is_caught(self):
        wrapper = {k: v for k, v in self.wrapper.items() if not k.startswith("columns(")}
        self.assertIn("declares columns(", "\n".join(iterator_problems(self.base, wrapper)))


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rocksdb-include", required=True, help="the RocksDB include directory")
    ap.add_argument("--cxx", default=os.environ.get("CXX", "c++"))
    ap.add_argument("--std", default="c++17")
    ap.add_argument("--project-root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
