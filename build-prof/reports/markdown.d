build-prof/reports/markdown.o: reports/markdown.c \
 reports/../harness/util.h reports/../harness/err.h reports/report.h \
 reports/../harness/err.h
reports/../harness/util.h:
reports/../harness/err.h:
reports/report.h:
reports/../harness/err.h:
