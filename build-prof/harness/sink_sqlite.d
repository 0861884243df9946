build-prof/harness/sink_sqlite.o: harness/sink_sqlite.c harness/sink.h \
 harness/err.h harness/scenario.h harness/util.h
harness/sink.h:
harness/err.h:
harness/scenario.h:
harness/util.h:
