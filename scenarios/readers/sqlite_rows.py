#!/usr/bin/env python3
"""A sink command: prints a SQLite query's rows as JSON lines, one object
per row keyed by the query's column names (`sink command` reads them).

    sqlite_rows.py DB QUERY

It stands for any store's client: a command that prints {"id": ...,
"writer": ..., "time": ...} per row is all `sink command` needs. Exits 2
naming the database when it cannot be read (streamdrill then reports the
run inconclusive with this message)."""
import json
import sqlite3
import sys


def main():
    if len(sys.argv) != 3:
        print("usage: sqlite_rows.py DB QUERY", file=sys.stderr)
        return 2
    db, query = sys.argv[1], sys.argv[2]
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        cur = con.execute(query)
    except sqlite3.Error as e:
        print(f"sqlite_rows.py: {db}: {e}", file=sys.stderr)
        return 2
    names = [c[0] for c in cur.description]
    for row in cur:
        sys.stdout.write(json.dumps(dict(zip(names, row, strict=True))) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
