build-mut/harness/base/err.o: harness/base/err.c harness/base/err.h
harness/base/err.h:
