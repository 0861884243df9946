build-mut/tests/test_sink: tests/unit/test_sink.c harness/kafka/broker.h \
 harness/base/err.h harness/lang/scenario.h harness/base/counts.h \
 harness/base/events.h harness/base/err.h harness/base/util.h \
 harness/base/util.h harness/sinks/jsonfast.h harness/sinks/jsonscan.h \
 harness/oracle/observe.h harness/sinks/sink.h
harness/kafka/broker.h:
harness/base/err.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/events.h:
harness/base/err.h:
harness/base/util.h:
harness/base/util.h:
harness/sinks/jsonfast.h:
harness/sinks/jsonscan.h:
harness/oracle/observe.h:
harness/sinks/sink.h:
