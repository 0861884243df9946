build-prof/harness/spark.o: harness/spark.c harness/spark.h harness/err.h \
 harness/util.h
harness/spark.h:
harness/err.h:
harness/util.h:
