build-mut/harness/run/run_send.o: harness/run/run_send.c \
 harness/oracle/recon.h harness/base/err.h harness/lang/scenario.h \
 harness/base/counts.h harness/base/events.h harness/base/err.h \
 harness/base/util.h harness/base/util.h harness/run/run_int.h \
 harness/run/run.h harness/kafka/broker.h harness/base/ledger.h \
 harness/kafka/producer.h harness/progress/progress.h \
 harness/progress/progress_batch.h harness/process/supervisor.h \
 harness/process/watchdog.h harness/kafka/proxy.h harness/sinks/sink.h \
 harness/process/watchdog.h harness/oracle/health.h
harness/oracle/recon.h:
harness/base/err.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/events.h:
harness/base/err.h:
harness/base/util.h:
harness/base/util.h:
harness/run/run_int.h:
harness/run/run.h:
harness/kafka/broker.h:
harness/base/ledger.h:
harness/kafka/producer.h:
harness/progress/progress.h:
harness/progress/progress_batch.h:
harness/process/supervisor.h:
harness/process/watchdog.h:
harness/kafka/proxy.h:
harness/sinks/sink.h:
harness/process/watchdog.h:
harness/oracle/health.h:
