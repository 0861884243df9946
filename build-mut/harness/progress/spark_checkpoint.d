build-mut/harness/progress/spark_checkpoint.o: \
 harness/progress/spark_checkpoint.c harness/progress/spark_checkpoint.h \
 harness/base/err.h harness/base/util.h harness/base/err.h
harness/progress/spark_checkpoint.h:
harness/base/err.h:
harness/base/util.h:
harness/base/err.h:
