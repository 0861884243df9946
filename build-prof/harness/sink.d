build-prof/harness/sink.o: harness/sink.c harness/sink.h harness/err.h \
 harness/scenario.h harness/util.h
harness/sink.h:
harness/err.h:
harness/scenario.h:
harness/util.h:
