#!/bin/sh
# A streaming query that dies the way a Spark job does: its own exception
# (StreamingQueryException, the cause on a "Caused by:" line), a long stack
# dump, then the shutdown noise of a closing JVM (a RejectedExecutionException
# naming a terminated pool) as the last lines of its stderr.
: > "$1"   # the sink it names, empty
echo "SD-READY"
sleep 1
cat >&2 <<'TRACE'
26/12/05 12:00:01 ERROR MicroBatchExecution: Query [id = 1b2c, runId = 9f3e] terminated with error
org.apache.spark.sql.streaming.StreamingQueryException: [STREAM_FAILED] Query [id = 1b2c, runId = 9f3e] terminated with exception: Job aborted.
	at org.apache.spark.sql.execution.streaming.StreamExecution.org$apache$spark$sql$execution$streaming$StreamExecution$$runStream(StreamExecution.scala:332)
Caused by: org.apache.spark.SparkException: [STATE_STORE_COMMIT_VALIDATION_FAILED] State store commit validation failed for batch 1
	at org.apache.spark.sql.execution.streaming.state.StateStoreCommitValidation.validate(StateStore.scala:101)
TRACE
i=0
while [ $i -lt 40 ]; do echo "	at org.apache.spark.rpc.netty.Dispatcher.postMessage(Dispatcher.scala:$i)" >&2; i=$((i + 1)); done
echo "Exception in thread \"dispatcher-event-loop-1\" java.util.concurrent.RejectedExecutionException: Task rejected from java.util.concurrent.ThreadPoolExecutor@5d1c [Terminated, pool size = 0]" >&2
echo "	at java.base/java.util.concurrent.ThreadPoolExecutor.reject(ThreadPoolExecutor.java:2065)" >&2
exit 1
