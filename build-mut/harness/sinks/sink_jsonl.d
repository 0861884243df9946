build-mut/harness/sinks/sink_jsonl.o: harness/sinks/sink_jsonl.c \
 harness/sinks/jsonfast.h harness/sinks/sink.h harness/base/err.h \
 harness/lang/scenario.h harness/base/counts.h harness/base/events.h \
 harness/base/err.h harness/base/util.h harness/base/util.h
harness/sinks/jsonfast.h:
harness/sinks/sink.h:
harness/base/err.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/events.h:
harness/base/err.h:
harness/base/util.h:
harness/base/util.h:
