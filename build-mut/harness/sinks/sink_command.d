build-mut/harness/sinks/sink_command.o: harness/sinks/sink_command.c \
 harness/process/command.h harness/base/err.h harness/base/util.h \
 harness/base/err.h harness/base/json.h harness/sinks/sink.h \
 harness/lang/scenario.h harness/base/counts.h harness/base/events.h \
 harness/base/util.h
harness/process/command.h:
harness/base/err.h:
harness/base/util.h:
harness/base/err.h:
harness/base/json.h:
harness/sinks/sink.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/events.h:
harness/base/util.h:
