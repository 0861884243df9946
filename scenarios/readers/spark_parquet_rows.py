#!/usr/bin/env python3
"""A sink command for a Spark file sink written as Parquet, a store
streamdrill has no reader for: prints its rows as JSON lines for
`sink command`.

    spark_parquet_rows.py DIR [--id FIELD]

The files are found the way Spark's readers find them: through
DIR/_spark_metadata (the newest N.compact, then the batch files after it;
each line after "v1" an entry {"path", "action": "add"|"delete"}), never by
listing DIR. Each row prints as {"id": FIELD's value, "writer": "batch N"
(the log batch that added its file, "compacted" when only a compact file
names it), plus the row's columns}. Needs pyarrow. Exits 2 naming what it
could not read: streamdrill then reports the run inconclusive."""
import argparse
import json
import os
import sys
from urllib.parse import unquote, urlparse


def log_entries(meta):
    """(path, action, batch or None) in log order, from the newest compact file on."""
    names = [n for n in os.listdir(meta) if n.split(".")[0].isdigit() and not n.startswith(".")]
    batches = sorted({int(n.split(".")[0]) for n in names})
    compacts = [b for b in batches if f"{b}.compact" in names]
    start = compacts[-1] if compacts else (batches[0] if batches else 0)
    for b in [x for x in batches if x >= start]:
        compact = f"{b}.compact" in names
        with open(os.path.join(meta, f"{b}.compact" if compact else str(b))) as f:
            lines = f.read().splitlines()
        if not lines or lines[0] != "v1":
            raise ValueError(f"{meta}/{b}: expected a v1 log file")
        for line in lines[1:]:
            if line.strip():
                e = json.loads(line)
                yield e["path"], e.get("action", "add"), None if compact else b


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("dir")
    ap.add_argument("--id", default="event_id")
    a = ap.parse_args()
    try:
        import pyarrow.parquet as pq
    except ImportError as e:
        print(f"spark_parquet_rows.py: {sys.executable} cannot import pyarrow ({e})", file=sys.stderr)
        return 2
    meta = os.path.join(a.dir, "_spark_metadata")
    if not os.path.isdir(meta):
        print(f"spark_parquet_rows.py: {a.dir} has no _spark_metadata log (no batch committed yet?)", file=sys.stderr)
        return 2
    files = {}
    try:
        for path, action, batch in log_entries(meta):
            local = unquote(urlparse(path).path)
            if action == "delete":
                files.pop(local, None)
            else:
                files[local] = batch if batch is not None else files.get(local)
    except (OSError, ValueError) as e:
        print(f"spark_parquet_rows.py: {meta}: {e}", file=sys.stderr)
        return 2
    out = sys.stdout
    for path, batch in files.items():
        try:
            rows = pq.read_table(path).to_pylist()
        except Exception as e:
            print(f"spark_parquet_rows.py: {path}: {e}", file=sys.stderr)
            return 2
        for r in rows:
            r["id"] = r.get(a.id)
            r["writer"] = f"batch {batch}" if batch is not None else "compacted"
            out.write(json.dumps(r, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
