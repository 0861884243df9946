build-mut/tests/test_progress: tests/unit/test_progress.c \
 harness/kafka/broker.h harness/base/err.h harness/lang/scenario.h \
 harness/base/counts.h harness/base/events.h harness/base/err.h \
 harness/base/util.h harness/base/util.h harness/base/ledger.h \
 harness/progress/progress.h harness/progress/progress_batch.h \
 harness/process/supervisor.h harness/process/watchdog.h \
 harness/run/run.h harness/kafka/producer.h harness/kafka/proxy.h \
 harness/oracle/recon.h harness/sinks/sink.h harness/process/watchdog.h
harness/kafka/broker.h:
harness/base/err.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/events.h:
harness/base/err.h:
harness/base/util.h:
harness/base/util.h:
harness/base/ledger.h:
harness/progress/progress.h:
harness/progress/progress_batch.h:
harness/process/supervisor.h:
harness/process/watchdog.h:
harness/run/run.h:
harness/kafka/producer.h:
harness/kafka/proxy.h:
harness/oracle/recon.h:
harness/sinks/sink.h:
harness/process/watchdog.h:
