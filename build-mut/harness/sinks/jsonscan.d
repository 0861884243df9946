build-mut/harness/sinks/jsonscan.o: harness/sinks/jsonscan.cpp \
 harness/sinks/jsonscan.h harness/base/json.h
harness/sinks/jsonscan.h:
harness/base/json.h:
