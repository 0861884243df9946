"""The Delta reader's Parquet helper (harness/sinks/sink_delta.c).

streamdrill replays the table's _delta_log itself and passes the data files
of the current snapshot on stdin, one JSON object per line:
    {"path": ABSOLUTE_PATH, "writer": LABEL, "t": COMMIT_MS, "pv": {PARTITION VALUES}}
This prints every row of those files as one JSON object per line: the
file's columns, its partition values, "sd_writer" (the commit that added the
file) and "sd_commit_ms". Needs pyarrow; exits 2 naming what is missing."""
import datetime
import decimal
import json
import sys


def plain(v):
    """A value JSON can hold: times as ISO-8601, decimals and bytes as text."""
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=datetime.timezone.utc)
        return v.isoformat()
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, bytes):
        return v.decode("utf-8", "backslashreplace")
    return str(v)


def main():
    try:
        import pyarrow.parquet as pq
    except ImportError as e:
        print(f"parquet_rows.py: {sys.executable} cannot import pyarrow ({e}); install it (pip install pyarrow) "
              "or name a Python that has it (sink delta ... python=PATH)", file=sys.stderr)
        return 2
    out = sys.stdout
    for n, line in enumerate(sys.stdin, 1):
        line = line.strip()
        if not line:
            continue
        f = json.loads(line)
        try:
            table = pq.read_table(f["path"])
        except Exception as e:  # a missing or damaged data file: the snapshot cannot be read
            print(f"parquet_rows.py: data file {f['path']} (added by {f['writer']}): {e}", file=sys.stderr)
            return 1
        pv = f.get("pv") or {}
        for row in table.to_pylist():
            for k, v in pv.items():
                row.setdefault(k, v)
            row["sd_writer"] = f["writer"]
            row["sd_commit_ms"] = f["t"]
            out.write(json.dumps(row, default=plain, ensure_ascii=False))
            out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
