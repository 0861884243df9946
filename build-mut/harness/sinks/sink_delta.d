build-mut/harness/sinks/sink_delta.o: harness/sinks/sink_delta.c \
 harness/process/command.h harness/base/err.h harness/base/util.h \
 harness/base/err.h harness/sinks/sink.h harness/lang/scenario.h \
 harness/base/counts.h harness/base/events.h harness/base/util.h
harness/process/command.h:
harness/base/err.h:
harness/base/util.h:
harness/base/err.h:
harness/sinks/sink.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/events.h:
harness/base/util.h:
