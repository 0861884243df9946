build-mut/harness/progress/progress_flink.o: \
 harness/progress/progress_flink.c harness/progress/progress.h \
 harness/base/err.h harness/progress/progress_batch.h \
 harness/process/supervisor.h harness/lang/scenario.h \
 harness/base/counts.h harness/base/events.h harness/base/err.h \
 harness/base/util.h harness/base/util.h harness/process/watchdog.h \
 harness/run/run.h harness/kafka/broker.h harness/base/ledger.h \
 harness/kafka/producer.h harness/progress/progress.h \
 harness/kafka/proxy.h harness/oracle/recon.h harness/sinks/sink.h \
 harness/process/watchdog.h harness/progress/spark_checkpoint.h
harness/progress/progress.h:
harness/base/err.h:
harness/progress/progress_batch.h:
harness/process/supervisor.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/events.h:
harness/base/err.h:
harness/base/util.h:
harness/base/util.h:
harness/process/watchdog.h:
harness/run/run.h:
harness/kafka/broker.h:
harness/base/ledger.h:
harness/kafka/producer.h:
harness/progress/progress.h:
harness/kafka/proxy.h:
harness/oracle/recon.h:
harness/sinks/sink.h:
harness/process/watchdog.h:
harness/progress/spark_checkpoint.h:
