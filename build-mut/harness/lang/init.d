build-mut/harness/lang/init.o: harness/lang/init.c harness/lang/init.h \
 harness/base/err.h harness/base/util.h harness/base/err.h
harness/lang/init.h:
harness/base/err.h:
harness/base/util.h:
harness/base/err.h:
