build-prof/harness/proxy.o: harness/proxy.c harness/proxy.h harness/err.h \
 harness/util.h
harness/proxy.h:
harness/err.h:
harness/util.h:
