build-mut/harness/explore/explore.o: harness/explore/explore.c \
 harness/explore/explore.h harness/lang/scenario.h harness/base/counts.h \
 harness/base/err.h harness/base/events.h harness/base/err.h \
 harness/base/util.h harness/base/util.h harness/kafka/cluster.h \
 harness/run/run.h harness/kafka/broker.h harness/base/ledger.h \
 harness/kafka/producer.h harness/progress/progress.h \
 harness/progress/progress_batch.h harness/process/supervisor.h \
 harness/process/watchdog.h harness/kafka/proxy.h harness/oracle/recon.h \
 harness/sinks/sink.h harness/process/watchdog.h harness/explore/shrink.h \
 harness/explore/xsched.h
harness/explore/explore.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/err.h:
harness/base/events.h:
harness/base/err.h:
harness/base/util.h:
harness/base/util.h:
harness/kafka/cluster.h:
harness/run/run.h:
harness/kafka/broker.h:
harness/base/ledger.h:
harness/kafka/producer.h:
harness/progress/progress.h:
harness/progress/progress_batch.h:
harness/process/supervisor.h:
harness/process/watchdog.h:
harness/kafka/proxy.h:
harness/oracle/recon.h:
harness/sinks/sink.h:
harness/process/watchdog.h:
harness/explore/shrink.h:
harness/explore/xsched.h:
