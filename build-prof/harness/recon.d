build-prof/harness/recon.o: harness/recon.c harness/recon.h harness/err.h \
 harness/scenario.h harness/util.h
harness/recon.h:
harness/err.h:
harness/scenario.h:
harness/util.h:
