build-mut/harness/base/util.o: harness/base/util.c harness/base/util.h \
 harness/base/err.h
harness/base/util.h:
harness/base/err.h:
