build-prof/harness/observe.o: harness/observe.c harness/observe.h \
 harness/err.h harness/sink.h harness/scenario.h harness/util.h \
 harness/events.h
harness/observe.h:
harness/err.h:
harness/sink.h:
harness/scenario.h:
harness/util.h:
harness/events.h:
