build-prof/harness/sink_kafka.o: harness/sink_kafka.c harness/broker.h \
 harness/err.h harness/scenario.h harness/sink.h harness/util.h
harness/broker.h:
harness/err.h:
harness/scenario.h:
harness/sink.h:
harness/util.h:
