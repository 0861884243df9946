build-mut/reports/explore.o: reports/explore.c harness/explore/explore.h \
 harness/lang/scenario.h harness/base/counts.h harness/base/err.h \
 harness/base/events.h harness/base/err.h harness/base/util.h \
 harness/base/util.h reports/report.h harness/base/figures.h
harness/explore/explore.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/err.h:
harness/base/events.h:
harness/base/err.h:
harness/base/util.h:
harness/base/util.h:
reports/report.h:
harness/base/figures.h:
