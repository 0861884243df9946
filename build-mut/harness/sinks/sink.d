build-mut/harness/sinks/sink.o: harness/sinks/sink.c harness/sinks/sink.h \
 harness/base/err.h harness/lang/scenario.h harness/base/counts.h \
 harness/base/events.h harness/base/err.h harness/base/util.h \
 harness/base/util.h harness/sinks/jsonfast.h harness/base/json.h \
 harness/sinks/jsonscan.h
harness/sinks/sink.h:
harness/base/err.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/events.h:
harness/base/err.h:
harness/base/util.h:
harness/base/util.h:
harness/sinks/jsonfast.h:
harness/base/json.h:
harness/sinks/jsonscan.h:
