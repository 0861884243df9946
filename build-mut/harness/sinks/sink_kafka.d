build-mut/harness/sinks/sink_kafka.o: harness/sinks/sink_kafka.c \
 harness/kafka/broker.h harness/base/err.h harness/lang/scenario.h \
 harness/base/counts.h harness/base/events.h harness/base/err.h \
 harness/base/util.h harness/base/util.h harness/sinks/sink.h
harness/kafka/broker.h:
harness/base/err.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/events.h:
harness/base/err.h:
harness/base/util.h:
harness/base/util.h:
harness/sinks/sink.h:
