build-mut/reports/markdown.o: reports/markdown.c harness/base/util.h \
 harness/base/err.h reports/report.h harness/base/err.h \
 harness/base/figures.h
harness/base/util.h:
harness/base/err.h:
reports/report.h:
harness/base/err.h:
harness/base/figures.h:
