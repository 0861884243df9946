build-mut/reports/charts.o: reports/charts.c harness/base/util.h \
 harness/base/err.h reports/report.h harness/base/err.h \
 harness/base/figures.h
harness/base/util.h:
harness/base/err.h:
reports/report.h:
harness/base/err.h:
harness/base/figures.h:
