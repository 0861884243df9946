build-prof/injectors/data.o: injectors/data.c \
 injectors/../harness/recon.h injectors/../harness/err.h \
 injectors/../harness/scenario.h injectors/../harness/run.h \
 injectors/../harness/broker.h injectors/../harness/events.h \
 injectors/../harness/util.h injectors/../harness/ledger.h \
 injectors/../harness/producer.h injectors/../harness/proxy.h \
 injectors/../harness/sink.h injectors/../harness/spark.h \
 injectors/../harness/supervisor.h injectors/../harness/watchdog.h
injectors/../harness/recon.h:
injectors/../harness/err.h:
injectors/../harness/scenario.h:
injectors/../harness/run.h:
injectors/../harness/broker.h:
injectors/../harness/events.h:
injectors/../harness/util.h:
injectors/../harness/ledger.h:
injectors/../harness/producer.h:
injectors/../harness/proxy.h:
injectors/../harness/sink.h:
injectors/../harness/spark.h:
injectors/../harness/supervisor.h:
injectors/../harness/watchdog.h:
