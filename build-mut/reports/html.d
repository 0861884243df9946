build-mut/reports/html.o: reports/html.c harness/base/counts.h \
 harness/base/util.h harness/base/err.h reports/report.h \
 harness/base/err.h harness/base/figures.h
harness/base/counts.h:
harness/base/util.h:
harness/base/err.h:
reports/report.h:
harness/base/err.h:
harness/base/figures.h:
