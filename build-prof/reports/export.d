build-prof/reports/export.o: reports/export.c reports/../harness/util.h \
 reports/../harness/err.h reports/report.h reports/../harness/err.h
reports/../harness/util.h:
reports/../harness/err.h:
reports/report.h:
reports/../harness/err.h:
