#!/bin/sh
# A pipeline that names its versions on its ready line, as the listener in
# streamdrill.spark does, then runs the command it is given (refpipe).
echo "SD-READY query=target spark=9.9.9 delta-spark=1.2.3"
exec "$@"
