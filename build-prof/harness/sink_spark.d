build-prof/harness/sink_spark.o: harness/sink_spark.c harness/sink.h \
 harness/err.h harness/scenario.h harness/util.h
harness/sink.h:
harness/err.h:
harness/scenario.h:
harness/util.h:
