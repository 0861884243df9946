build-mut/harness/oracle/result_join.o: harness/oracle/result_join.c \
 harness/oracle/result.h harness/base/util.h harness/base/err.h
harness/oracle/result.h:
harness/base/util.h:
harness/base/err.h:
