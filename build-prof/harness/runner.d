build-prof/harness/runner.o: harness/runner.c harness/run.h \
 harness/broker.h harness/err.h harness/scenario.h harness/events.h \
 harness/util.h harness/ledger.h harness/producer.h harness/proxy.h \
 harness/sink.h harness/spark.h harness/supervisor.h harness/watchdog.h \
 harness/../reports/report.h harness/../reports/../harness/err.h \
 harness/../reports/../harness/util.h harness/observe.h harness/recon.h
harness/run.h:
harness/broker.h:
harness/err.h:
harness/scenario.h:
harness/events.h:
harness/util.h:
harness/ledger.h:
harness/producer.h:
harness/proxy.h:
harness/sink.h:
harness/spark.h:
harness/supervisor.h:
harness/watchdog.h:
harness/../reports/report.h:
harness/../reports/../harness/err.h:
harness/../reports/../harness/util.h:
harness/observe.h:
harness/recon.h:
