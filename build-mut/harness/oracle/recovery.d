build-mut/harness/oracle/recovery.o: harness/oracle/recovery.c \
 harness/oracle/recovery.h harness/base/err.h harness/base/figures.h \
 harness/base/util.h harness/base/err.h
harness/oracle/recovery.h:
harness/base/err.h:
harness/base/figures.h:
harness/base/util.h:
harness/base/err.h:
