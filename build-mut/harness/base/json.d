build-mut/harness/base/json.o: harness/base/json.c harness/base/json.h
harness/base/json.h:
