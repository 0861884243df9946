build-mut/tests/test_spark: tests/unit/test_spark.c harness/sinks/sink.h \
 harness/base/err.h harness/lang/scenario.h harness/base/counts.h \
 harness/base/events.h harness/base/err.h harness/base/util.h \
 harness/base/util.h harness/progress/spark_checkpoint.h
harness/sinks/sink.h:
harness/base/err.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/events.h:
harness/base/err.h:
harness/base/util.h:
harness/base/util.h:
harness/progress/spark_checkpoint.h:
