build-mut/harness/oracle/health.o: harness/oracle/health.c \
 harness/oracle/health.h harness/base/util.h harness/base/err.h
harness/oracle/health.h:
harness/base/util.h:
harness/base/err.h:
