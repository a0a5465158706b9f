#!/usr/bin/env python3
"""tests/chaos/plans.py MAX_BUFFERS MAX_SEQ_PAGES SIZES < psql-stderr: check
the plans auto_explain logged.

stdin is what psql printed while auto_explain (log_level=notice,
log_format=json, log_analyze, log_buffers, log_nested_statements) logged
every statement a call ran, nested ones included: each plan arrives as a
NOTICE "duration: ... plan:" followed by a JSON document. Lines "@@section
NAME" (psql's \\warn) split it; the sections named claim* are checked, the
others are reported. SIZES is a JSON object: relation name -> pages.

Prints one JSON object: per section, the plans read and per distinct query
text (first 120 characters) its executions, its scans (node type on relation
using index) and its largest buffer count (shared hit + read of its top node;
PostgreSQL counts what a called function's statements read in the calling
node, so the outer call's figure bounds the whole call); then "violations"
(checked sections only):
  - a scan of a relation that is not an index scan (anything but Index Scan,
    Index Only Scan, Bitmap Heap/Index Scan, or a Tid Scan: it reads the
    rows its ctids name, which an index scan found) on a relation of more than
    MAX_SEQ_PAGES pages: on a smaller one (an empty user_holds) PostgreSQL
    rightly reads the whole table, and what it reads stays bounded
  - a statement reading more than MAX_BUFFERS buffers

Always exits 0: the caller decides. A plan that does not parse is a violation.
"""
import json
import re
import sys

INDEX_SCANS = {"Index Scan", "Index Only Scan", "Bitmap Heap Scan", "Bitmap Index Scan",
               "Tid Scan"}
NOT_SCANS = {"ModifyTable", "Function Scan", "Values Scan", "Result", "CTE Scan",
             "Subquery Scan", "WorkTable Scan", "Named Tuplestore Scan", "Table Function Scan"}


def walk(node):
    yield node
    for child in node.get("Plans", []):
        yield from walk(child)


def shape(node):
    """The plan as one line: node (relation, index) > children."""
    t = node.get("Node Type", "?")
    if node.get("Relation Name"):
        t += f" on {node['Relation Name']}"
    if node.get("Index Name"):
        t += f" using {node['Index Name']}"
    kids = [shape(c) for c in node.get("Plans", [])]
    if not kids:
        return t
    return t + " > " + (kids[0] if len(kids) == 1 else "[" + ", ".join(kids) + "]")


def buffers(node):
    return node.get("Shared Hit Blocks", 0) + node.get("Shared Read Blocks", 0)


def section(text, checked, limit, seq_pages, sizes, violations):
    dec = json.JSONDecoder()
    plans = []
    for m in re.finditer(r"duration: [0-9.]+ ms\s+plan:\s*", text):
        try:
            plans.append(dec.raw_decode(text, m.end())[0])
        except ValueError as e:
            violations.append(f"an auto_explain plan did not parse: {e}")
    distinct = {}
    for doc in plans:
        q = " ".join(doc.get("Query Text", "?").split())[:120]
        top = doc["Plan"]
        own = buffers(top)
        d = distinct.setdefault(q, {"query": q, "executions": 0, "scans": [], "max_buffers": 0,
                                    "plan": shape(top)})
        d["executions"] += 1
        if own > d["max_buffers"]:
            d["max_buffers"], d["plan"] = own, shape(top)
        for n in walk(top):
            t, rel = n.get("Node Type", ""), n.get("Relation Name")
            if rel is None or t in NOT_SCANS:
                continue
            via = n.get("Index Name", "")
            s = f"{t} on {rel}" + (f" using {via}" if via else "")
            if s not in d["scans"]:
                d["scans"].append(s)
            pages = sizes.get(rel)
            if checked and t not in INDEX_SCANS and (pages is None or pages > seq_pages):
                violations.append(f"{t} on {rel} ({pages} pages) in: {q}")
    for d in distinct.values():
        if checked and d["max_buffers"] > limit:
            violations.append(f"{d['max_buffers']} buffers (bound {limit}; {d['executions']} runs)"
                              f" in: {d['query']}")
    if checked and not plans:
        violations.append("auto_explain logged no plan")
    return {"statements": len(plans),
            "max_buffers": max([d["max_buffers"] for d in distinct.values()] or [0]),
            "distinct": list(distinct.values())}


def main():
    limit, seq_pages, sizes = int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
    parts = re.split(r"^@@section (\w+)\s*$", sys.stdin.read(), flags=re.M)
    violations, out = [], {}
    for name, text in zip(parts[1::2], parts[2::2]):
        out[name] = section(text, name.startswith("claim"), limit, seq_pages, sizes, violations)
    if not any(k.startswith("claim") for k in out):
        violations.append("no claim section in psql's output")
    out["violations"] = sorted(set(violations))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
