#!/bin/sh
# A pipeline that never becomes quiescent: it adds a row every 200 ms.
db="$1"
sqlite3 "$db" "CREATE TABLE IF NOT EXISTS bronze(event_id TEXT)"
i=0
while true; do
    sqlite3 "$db" "INSERT INTO bronze VALUES('noise-$i')"
    i=$((i + 1))
    sleep 0.2
done
