# streamdrill - a plain Makefile (explicit source lists, -MMD dependencies).
#
#   make            build build/streamdrill and the reference pipeline
#   make demo       install the build packages that are missing, build, run the parcel drill on the embedded broker
#   make test       install what is missing, build, run unit tests and scenario tests
#                   (embedded cluster, then a real Kafka broker and Spark)
#   make test-fast  the same without the real broker and Spark
#   make lint       shellcheck over the shell scripts, ruff over the Python (in make test)
#   make mutate     mutation testing of the verdict logic (ROOM=, N=, SEED=, REAL=1, SANITIZE=1, RECHECK=1; in make test-real-long)
#   make bench      speed and memory figures against baselines measured in the same run
#   make bench-profile  perf profiles of the figures that miss their targets
#   make ecmare-diff  the ECMA-262 pattern reader against Node's RegExp on random patterns
#                   (ECMARE_CASES=5000 a seed, ECMARE_SEEDS=1,2,3; in make test)
#   make fuzz       libFuzzer on the scenario parser, sink-row parsing, checkpoint files, the registry formats' readers and answers,
#                   and the Delta log, Spark file-sink log and Avro container file readers
#                   (FUZZ_SECONDS=60 each; 15 in make test)
#   make asan       the same binaries with AddressSanitizer and UBSan, in build-asan/, and the
#                   embedded-broker scenario tests run with them
#   make install    PREFIX=/usr/local DESTDIR=: the binary, the reference pipelines under
#                   PREFIX/libexec/streamdrill, example drills, JSON Schemas, streamdrill(1),
#                   bash completion (make uninstall removes exactly those files)
#   make deb        build/streamdrill_VERSION_ARCH.deb (runtime dependencies from dpkg-shlibdeps),
#                   checked with lintian
#   make image      build/streamdrill-oci.tar: an OCI image of that package (mmdebstrap, umoci; no daemon)
#   make clean

CC      ?= cc
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
LDFLAGS ?=
WARN     = -Wall -Wextra -Werror
CPPFLAGS = -D_GNU_SOURCE -I/usr/include/postgresql $(addprefix -I,$(HARNESS_DIRS)) -Ireports -I$(BUILD)/gen
CXX     ?= c++
CXXFLAGS ?= $(OPT) -g
LIBS     = -lrdkafka -lpq -lsqlite3 -ljansson -lpcre2-8 -lavro -lprotobuf-c -lprotobuf -lsimdjson -lcurl -lcrypto -lstdc++ -lpthread -lm
BUILD   ?= build
SAN     ?=

# harness/: the command line (main.c) and one folder per concern (docs/layout.md)
HARNESS_DIRS = harness/base harness/format harness/lang harness/oracle harness/kafka harness/process harness/sinks harness/progress \
               harness/run harness/explore
HARNESS_SRC = harness/base/err.c harness/base/util.c harness/base/json.c harness/base/ledger.c harness/base/ledger_writer.c harness/base/ledger_events.c harness/base/ledger_read.c harness/base/ledger_sql.c harness/base/ledger_series.c harness/base/events.c harness/base/props.c \
              harness/format/jschema.c harness/format/ecmare.c harness/format/registry.c harness/format/wire.c \
              harness/lang/scenario.c harness/lang/parse.c harness/lang/lang.c harness/lang/lang_words.c harness/lang/lang_line.c harness/lang/lang_hooks.c harness/lang/lang_help.c harness/lang/init.c \
              harness/oracle/observe.c harness/oracle/recon.c harness/oracle/late.c harness/oracle/result.c harness/oracle/result_join.c harness/oracle/recovery.c harness/oracle/health.c \
              harness/kafka/broker.c harness/kafka/cluster.c harness/kafka/producer.c harness/kafka/proxy.c harness/kafka/links.c \
              harness/process/watchdog.c harness/process/supervisor.c harness/process/command.c harness/process/deployed.c \
              harness/sinks/sink.c harness/sinks/sink_json.c harness/sinks/jsonfast.c harness/sinks/sink_sqlite.c harness/sinks/sink_kafka.c \
              harness/sinks/sink_jsonl.c harness/sinks/sink_spark.c harness/sinks/sink_command.c harness/sinks/sink_delta.c \
              harness/sinks/sink_postgres.c \
              harness/progress/spark_checkpoint.c harness/progress/progress_batch.c harness/progress/progress.c \
              harness/progress/progress_spark.c harness/progress/progress_group.c harness/progress/progress_flink.c \
              harness/run/run_base.c harness/run/runner.c harness/run/run_send.c harness/run/run_loop.c harness/run/run_wait.c harness/run/run_instances.c \
              harness/run/run_judge.c harness/run/run_facts.c harness/run/run_model.c harness/run/run_bounds.c harness/run/run_late.c harness/run/run_join.c harness/run/run_recovery.c harness/run/run_operator.c harness/run/run_wire.c \
              harness/explore/xsched.c harness/explore/shrink.c harness/explore/explore.c
INJECT_SRC  = injectors/process.c injectors/data.c injectors/clock.c injectors/storage.c injectors/network.c injectors/broker.c injectors/command.c
REPORT_SRC  = reports/model.c reports/write.c reports/summary.c reports/junit.c reports/markdown.c reports/charts.c reports/html.c reports/index.c \
              reports/export.c reports/explore.c
# the C++ files: simdjson and libprotobuf behind C interfaces
# (harness/sinks/jsonscan.cpp, harness/format/protodyn.cpp)
CXX_SRC     = harness/sinks/jsonscan.cpp harness/format/protodyn.cpp
LIB_SRC     = $(HARNESS_SRC) $(INJECT_SRC) $(REPORT_SRC)
MAIN_SRC    = harness/main.c
TEST_NAMES  = test_scenario test_command test_init test_recon test_result test_events test_ledger test_sink test_util test_supervisor test_spark test_report test_explore \
              test_progress test_proxy test_recovery test_cluster test_jschema test_protodyn test_registry test_broker
PIPELINES   = scenarios/pipelines/refpipe scenarios/pipelines/refjoin scenarios/pipelines/reftxn

# the parcel scans' Protobuf message (harness/format/parcel_scan.proto): C from
# protoc-c, and the .proto's text as a C string to register
PROTO_GEN = $(BUILD)/gen/parcel_scan.pb-c.c $(BUILD)/gen/parcel_scan.pb-c.h $(BUILD)/gen/parcel_scan.proto.inc
LIB_OBJ  = $(LIB_SRC:%.c=$(BUILD)/%.o) $(CXX_SRC:%.cpp=$(BUILD)/%.o) $(BUILD)/gen/parcel_scan.pb-c.o
MAIN_OBJ = $(MAIN_SRC:%.c=$(BUILD)/%.o)
TESTS    = $(TEST_NAMES:%=$(BUILD)/tests/%)

# how many compiles (and fuzz targets) make test runs at once: one per core
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

VERSION := $(shell sed -n 's/^\#define SD_VERSION "\(.*\)"/\1/p' harness/main.c)

all: $(BUILD)/streamdrill $(PIPELINES) $(BUILD)/streamdrill.1.tmpl $(BUILD)/streamdrill.1

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(WARN) -MMD -MP -c $< -o $@

$(BUILD)/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) $(SAN) -std=c++17 -Wall -Wextra -Werror -MMD -MP -c $< -o $@

$(BUILD)/gen/parcel_scan.pb-c.c $(BUILD)/gen/parcel_scan.pb-c.h &: harness/format/parcel_scan.proto
	@mkdir -p $(BUILD)/gen
	protoc-c --proto_path=harness/format --c_out=$(BUILD)/gen parcel_scan.proto

$(BUILD)/gen/parcel_scan.proto.inc: harness/format/parcel_scan.proto
	@mkdir -p $(BUILD)/gen
	sed 's/\\/\\\\/g; s/"/\\"/g; s/.*/"&\\n"/' $< > $@

$(BUILD)/gen/parcel_scan.pb-c.o: $(BUILD)/gen/parcel_scan.pb-c.c
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) -c $< -o $@

$(BUILD)/harness/format/wire.o: $(PROTO_GEN)

$(BUILD)/libstreamdrill.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/streamdrill: $(MAIN_OBJ) $(BUILD)/libstreamdrill.a
	$(CC) $(CFLAGS) $(LDFLAGS) $(SAN) -o $@ $(MAIN_OBJ) $(BUILD)/libstreamdrill.a $(LIBS)

# what refwire.h decodes with besides the libraries: the harness's
# Protobuf reader (C++, libprotobuf), JSON Schema validator (with its
# ECMA-262 patterns), and its registry client (libcurl) with the helpers it
# stands on
REFWIRE_OBJ = $(BUILD)/harness/format/protodyn.o $(BUILD)/harness/format/jschema.o $(BUILD)/harness/format/ecmare.o \
              $(BUILD)/harness/format/registry.o $(BUILD)/harness/base/props.o $(BUILD)/harness/base/util.o $(BUILD)/harness/base/err.o
REFWIRE_LIBS = -lrdkafka -lsqlite3 -ljansson -lpcre2-8 -lavro -lprotobuf -lcurl -lcrypto -lstdc++ -lpthread -lm

scenarios/pipelines/refpipe: scenarios/pipelines/refpipe.c scenarios/pipelines/refcommon.h scenarios/pipelines/refwire.h $(REFWIRE_OBJ)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(WARN) -o $@ $< $(REFWIRE_OBJ) $(REFWIRE_LIBS)

# refcommon.h's client properties file: the harness's reader and what it stands on
REFCOMMON_OBJ = $(BUILD)/harness/base/props.o $(BUILD)/harness/base/util.o $(BUILD)/harness/base/err.o

scenarios/pipelines/refjoin: scenarios/pipelines/refjoin.c scenarios/pipelines/refcommon.h $(REFCOMMON_OBJ)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(WARN) -o $@ $< $(REFCOMMON_OBJ) -lrdkafka -lsqlite3 -ljansson -lcrypto -lpthread -lm

scenarios/pipelines/reftxn: scenarios/pipelines/reftxn.c scenarios/pipelines/refcommon.h scenarios/pipelines/refwire.h $(REFWIRE_OBJ)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(WARN) -o $@ $< $(REFWIRE_OBJ) $(REFWIRE_LIBS)

# the unit tests run under LeakSanitizer (under ASan's own when SAN is set):
# a leak in what they exercise fails them (make unit reads their stderr)
TEST_SAN = $(if $(SAN),,-fsanitize=leak)
$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libstreamdrill.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(TEST_SAN) $(WARN) -Wno-missing-field-initializers -MMD -MP -o $@ $< $(BUILD)/libstreamdrill.a -lcriterion $(LIBS)

# test_protodyn also links the hand-written reader it compares the new one
# with (tests/unit/protodyn_legacy.c, in no other binary)
$(BUILD)/tests/test_protodyn: tests/unit/test_protodyn.c tests/unit/protodyn_legacy.c tests/unit/protodyn_legacy.h $(BUILD)/libstreamdrill.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(TEST_SAN) $(WARN) -Wno-missing-field-initializers -o $@ tests/unit/test_protodyn.c tests/unit/protodyn_legacy.c $(BUILD)/libstreamdrill.a -lcriterion $(LIBS)

# the ECMA-262 pattern reader answering [pattern, subject] lines, for
# tests/ecmare_diff.py (no Criterion: a filter, not a test of its own)
$(BUILD)/tests/ecmare_probe: tests/unit/ecmare_probe.c $(BUILD)/libstreamdrill.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(WARN) -MMD -MP -o $@ $< $(BUILD)/libstreamdrill.a $(LIBS)

# the same tests pointed at the hand-written reader: each defect of issue 76
# fails there (the corpus tests compare it with itself and pass)
protodyn-legacy-check: $(BUILD)/libstreamdrill.a
	@mkdir -p $(BUILD)/tests
	$(CC) -DSD_PROTODYN_TEST_LEGACY $(CPPFLAGS) $(CFLAGS) $(WARN) -Wno-missing-field-initializers -o $(BUILD)/tests/test_protodyn_legacy \
	  tests/unit/test_protodyn.c tests/unit/protodyn_legacy.c $(BUILD)/libstreamdrill.a -lcriterion $(LIBS)
	-@$(BUILD)/tests/test_protodyn_legacy --short-filename 2>&1 | grep -E '^\[(FAIL|====)\]|^\[----\] .*(Assertion|signal|crash)'

BENCH_BINS = $(BUILD)/bench/sd_bench $(BUILD)/bench/bare_produce

$(BUILD)/bench/sd_bench: tests/bench/sd_bench.c $(BUILD)/libstreamdrill.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -Wno-missing-field-initializers -o $@ $< $(BUILD)/libstreamdrill.a $(LIBS)

$(BUILD)/bench/bare_produce: tests/bench/bare_produce.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ $< -lrdkafka

# the Debian packages: everything (the tests' too) / what building needs
deps:
	@scripts/deps.sh

deps-build:
	@scripts/deps.sh build

# the man page: docs/streamdrill.1.in with the language's two tables
# printed from lang.c's table at the @LANGUAGE@ line (build/streamdrill.1.tmpl,
# paths still @DATADIR@ and @LIBEXECDIR@); build/streamdrill.1 has the
# paths of the default PREFIX, install writes those of its own PREFIX
MAN_PATHS = sed -e 's\#@VERSION@\#$(VERSION)\#g' -e 's\#@DATADIR@\#$(DATADIR)\#g' -e 's\#@LIBEXECDIR@\#$(LIBEXECDIR)\#g'

$(BUILD)/streamdrill.1.tmpl: docs/streamdrill.1.in $(BUILD)/streamdrill
	{ sed -n '1,/@LANGUAGE@/p' $<; $(BUILD)/streamdrill help --man; sed '1,/@LANGUAGE@/d' $<; } > $@.tmp
	mv $@.tmp $@

$(BUILD)/streamdrill.1: $(BUILD)/streamdrill.1.tmpl
	$(MAN_PATHS) $< > $@

# ---- installing: the layout is documented in docs/install.md
PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR      = $(PREFIX)/bin
LIBEXECDIR  = $(PREFIX)/libexec/streamdrill
DATADIR     = $(PREFIX)/share/streamdrill
MANDIR      = $(PREFIX)/share/man/man1
COMPDIR     = $(PREFIX)/share/bash-completion/completions
DOCDIR      = $(PREFIX)/share/doc/streamdrill
EXAMPLES    = $(wildcard scenarios/parcel-*.drill)
# the references README.md links to, beside it
DOCS        = $(wildcard docs/*.md)
# what install writes, one path a line, for uninstall (and nothing else)
INSTALLED   = $(BINDIR)/streamdrill $(LIBEXECDIR)/refpipe $(LIBEXECDIR)/refjoin $(LIBEXECDIR)/reftxn $(LIBEXECDIR)/parquet_rows.py \
              $(EXAMPLES:scenarios/%=$(DATADIR)/scenarios/%) $(DATADIR)/scenarios/readers/sqlite_rows.py \
              $(DATADIR)/schemas/summary.schema.json $(DATADIR)/schemas/manifest.schema.json \
              $(MANDIR)/streamdrill.1 $(COMPDIR)/streamdrill $(DOCDIR)/README.md $(DOCS:%=$(DOCDIR)/%)

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(DATADIR)/scenarios/readers $(DESTDIR)$(DATADIR)/schemas \
	  $(DESTDIR)$(MANDIR) $(DESTDIR)$(COMPDIR) $(DESTDIR)$(DOCDIR)/docs
	install -m 755 $(BUILD)/streamdrill $(DESTDIR)$(BINDIR)/streamdrill
	install -m 755 $(PIPELINES) $(DESTDIR)$(LIBEXECDIR)/
	install -m 644 harness/sinks/parquet_rows.py $(DESTDIR)$(LIBEXECDIR)/
	install -m 644 $(EXAMPLES) $(DESTDIR)$(DATADIR)/scenarios/
	install -m 755 scenarios/readers/sqlite_rows.py $(DESTDIR)$(DATADIR)/scenarios/readers/
	install -m 644 reports/schemas/summary.schema.json reports/schemas/manifest.schema.json $(DESTDIR)$(DATADIR)/schemas/
	$(MAN_PATHS) $(BUILD)/streamdrill.1.tmpl > $(DESTDIR)$(MANDIR)/streamdrill.1
	chmod 644 $(DESTDIR)$(MANDIR)/streamdrill.1
	install -m 644 dist/streamdrill.bash-completion $(DESTDIR)$(COMPDIR)/streamdrill
	install -m 644 README.md $(DESTDIR)$(DOCDIR)/README.md
	install -m 644 $(DOCS) $(DESTDIR)$(DOCDIR)/docs/

# removes the files install wrote and the folders of streamdrill's own
# that are left empty; nothing else
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	-rmdir $(DESTDIR)$(DATADIR)/scenarios/readers $(DESTDIR)$(DATADIR)/scenarios $(DESTDIR)$(DATADIR)/schemas \
	  $(DESTDIR)$(DATADIR) $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(DOCDIR)/docs $(DESTDIR)$(DOCDIR) 2>/dev/null

# a Debian package of `make install PREFIX=/usr`: Depends from
# dpkg-shlibdeps over the binaries, then lintian (an error fails the target)
DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null)
DEB       = $(BUILD)/streamdrill_$(VERSION)_$(DEB_ARCH).deb

deb: $(DEB)

# the build tools first (a fresh machine has no compiler), then the build
# itself with Debian's hardening flags (dpkg-buildflags), in a folder of
# its own so the development build keeps its flags, then the package
# (scripts/deb.sh); one line per phase, the whole output in build/logs/
DEB_BUILD   = $(BUILD)/pkg
DEB_FLAGS   = DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get
DEB_CFLAGS  = $(shell $(DEB_FLAGS) CFLAGS) $(shell $(DEB_FLAGS) CPPFLAGS)
DEB_LDFLAGS = $(shell $(DEB_FLAGS) LDFLAGS)
$(DEB): deps-build dist/debian/control.in dist/debian/copyright dist/debian/changelog scripts/deb.sh
	@scripts/phase.sh "building streamdrill with Debian's hardening flags" $(BUILD)/logs/deb-build.log \
	  $(MAKE) --no-print-directory BUILD=$(DEB_BUILD) CFLAGS="$(DEB_CFLAGS)" CXXFLAGS="$(DEB_CFLAGS)" LDFLAGS="$(DEB_LDFLAGS)" all
	@scripts/phase.sh "laying out the package, dpkg-deb, lintian" $(BUILD)/logs/deb-package.log \
	  env CC="$(CC)" CPPFLAGS="$(CPPFLAGS)" DEB_CFLAGS="$(DEB_CFLAGS)" DEB_LDFLAGS="$(DEB_LDFLAGS)" \
	  REFWIRE_OBJS="$(patsubst $(BUILD)/%,%,$(REFWIRE_OBJ))" REFWIRE_LIBS="$(REFWIRE_LIBS)" \
	  scripts/deb.sh $(DEB_BUILD) $(BUILD)/deb $@ $(VERSION) $(DEB_ARCH)
	@echo "package: $@"

# an OCI container image of the package, built with Debian's tools and no
# daemon (scripts/image.sh); tests/image/test_image.sh runs a drill in it
IMAGE = $(BUILD)/streamdrill-oci.tar
image: $(IMAGE)

$(IMAGE): $(DEB) scripts/image.sh
	@scripts/deps.sh build mmdebstrap umoci
	@scripts/phase.sh "building the OCI image (mmdebstrap, umoci)" $(BUILD)/logs/image.log scripts/image.sh $(DEB) $@
	@echo "image: $@ (podman load -i $@, or skopeo copy oci-archive:$@ ...)"

unit: $(TESTS)
	@for t in $(TESTS); do echo "== $$t"; rc=0; LSAN_OPTIONS=suppressions=$(CURDIR)/tests/unit/lsan.supp $$t --jobs 2 --short-filename >$$t.log 2>&1 || rc=$$?; cat $$t.log; \
	  if [ $$rc != 0 ]; then exit $$rc; fi; \
	  if grep -q "ERROR: LeakSanitizer: detected memory leaks" $$t.log; then echo "$$t: a leak (above)"; exit 1; fi; done
	@python3 scripts/sizes.py --top 0 --max-lines 150 >/dev/null && echo "== sizes: no function over 150 lines without a reason above it"
	@python3 scripts/exports.py && echo "== exports: every function a header exports has a caller"
	@python3 scripts/counts.py && echo "== counts: summary.json's schema lists every count of counts.h, in its order, with its meaning"

scenario-tests: all
	@python3 tests/run_scenarios.py --bin $(BUILD)/streamdrill

# shellcheck over the shell scripts, ruff over the Python (ruff.toml says
# which rules; a finding silenced in place says why)
SHELL_SCRIPTS = $(shell find scenarios/env scenarios/deployed scripts tests -name '*.sh') scenarios/pipelines/connect/file-sink \
                scenarios/pipelines/connect/mirror-maker scenarios/pipelines/streams/dedup-app \
                scenarios/pipelines/python/quix-dedup scenarios/pipelines/python/faust-dedup
lint:
	@shellcheck $(SHELL_SCRIPTS) && echo "== shellcheck: $(words $(SHELL_SCRIPTS)) shell scripts clean"
	@py=$$(sh tests/venv.sh) && $$(dirname $$py)/ruff check --quiet python tests scripts scenarios && echo "== ruff: python/, tests/, scripts/ and the jobs clean"

# mutation testing of the verdict logic (scripts/mutate.py): N mutants that
# compile per room (ROOM=oracle, progress or run; all three without it),
# drawn with SEED, each run against its room's unit tests and scenario cases
# (REAL=1: and, for the consumer-group poller's mutants, its cases on a real
# Apache Kafka broker started once for the run; SANITIZE=1: built and run
# under AddressSanitizer and UBSan, in build-asan/, so that a leak or an
# overflow a mutant plants kills it; RECHECK=1: only the last run's
# survivors, again); the kill rates, and the survivors in
# $(BUILD)/mutate/ROOM.txt
N    ?= 40
SEED ?= 1
ROOM ?=
mutate: all $(TESTS) $(if $(SANITIZE),asan-build)
	@py=$$(sh tests/venv.sh) && $(if $(SANITIZE),$(ASAN_ENV)) $$py scripts/mutate.py --build $(BUILD) --n $(N) --seed $(SEED) \
	  $(if $(ROOM),--room $(ROOM)) $(if $(REAL),--real) $(if $(SANITIZE),--sanitize="$(ASAN_SAN)") $(if $(RECHECK),--recheck)

# everything but the real Kafka broker and Spark (a quick loop while developing)
test-fast: deps
	@scripts/phase.sh "building streamdrill, the reference pipelines and the unit tests" $(BUILD)/logs/build.log \
	  $(MAKE) --no-print-directory -j$(JOBS) all $(TESTS)
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory lint
	python3 tests/run_scenarios.py --bin $(BUILD)/streamdrill --no-real

# the unit tests, the scenario tests on the embedded cluster, then the same
# drills and the Spark drills on a real Apache Kafka broker (KRaft) and
# PySpark, both installed and started by the project's own scripts
test: deps
	@scripts/phase.sh "building streamdrill, the reference pipelines and the unit tests" $(BUILD)/logs/build.log \
	  $(MAKE) --no-print-directory -j$(JOBS) all $(TESTS)
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory ecmare-diff
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory mutate-sample
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=8
	@$(MAKE) --no-print-directory scenario-tests

# make test's check that the mutation tool still works: 4 mutants of the
# oracle room against its unit tests only (the kill rates come from make mutate)
mutate-sample: all $(TESTS)
	@py=$$(sh tests/venv.sh) && $$py scripts/mutate.py --build $(BUILD) --n 4 --seed 7 --room oracle --units-only --expect-killed 1

# the longer real-stack matrix (tests/long/: repeated Kafka Connect drills
# on the real broker); not part of `make test`
test-real-long: deps
	$(MAKE) all $(TESTS)
	python3 tests/run_scenarios.py --bin $(BUILD)/streamdrill --long
	$(MAKE) --no-print-directory join-under-load
	$(MAKE) --no-print-directory mutate REAL=1 SANITIZE=1

# the join model's pending rules under load: refjoin's outer joins RUNS
# times each beside two CPU burners, no false FAIL (in test-real-long)
RUNS ?= 100
join-under-load: all
	python3 scripts/join_under_load.py --bin $(BUILD)/streamdrill --runs $(RUNS)

demo: deps-build
	@scripts/phase.sh "building streamdrill and the reference pipelines" $(BUILD)/logs/build.log $(MAKE) --no-print-directory all
	@$(BUILD)/streamdrill run scenarios/parcel-restart.drill --out streamdrill-out; rc=$$?; \
	echo "report: streamdrill-out/parcel-restart/report.html (report.md, summary.json, junit.xml, charts/, export/ beside it)"; exit $$rc

# speed and memory against baselines measured in the same run (not part of
# `make test`): see tests/bench/bench.py and docs/testing.md, "Benchmarks"
bench: deps
	$(MAKE) all $(BENCH_BINS)
	python3 tests/bench/bench.py --build $(BUILD)

# where the time goes in the figures that miss their targets (perf)
bench-profile: deps
	scripts/deps.sh linux-perf
	$(MAKE) all $(BENCH_BINS)
	python3 tests/bench/profile.py --build $(BUILD)

# the ECMA-262 pattern reader (harness/format/ecmare.c) against Node's
# RegExp with the u flag (tests/ecmare_diff.py): ECMARE_CASES random
# patterns and subjects for each seed of ECMARE_SEEDS, asked of both;
# a disagreement fails it, shown made smaller. Node is installed by
# scripts/deps.sh (Debian's nodejs)
ECMARE_CASES ?= 5000
ECMARE_SEEDS ?= 1,2,3
ecmare-diff: $(BUILD)/tests/ecmare_probe
	@scripts/deps.sh build nodejs
	@python3 tests/ecmare_diff.py --probe $(BUILD)/tests/ecmare_probe --count $(ECMARE_CASES) --seeds $(ECMARE_SEEDS) --brief

# libFuzzer targets (clang) for the scenario parser, a sink row's id
# parsing, the checkpoint readers (a Flink _metadata, a Spark offsets/N,
# a checkpoint file's name), the registry formats' readers, a registry's
# answers (status and body) and the URLs and auth= its client takes, the sink
# logs and files read from disk (a Delta _delta_log, a Spark file sink's
# _spark_metadata, an Avro object container file), each run FUZZ_SECONDS
# (make test: 15) from a seed corpus of the repository's drills, event
# lines and the files under tests/fuzz/seeds/ and tests/fuzz/regressions/;
# any crash, sanitizer report, leak or hang fails the target (its input is
# left in build-fuzz/)
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = fuzz_scenario fuzz_sink_row fuzz_checkpoint fuzz_wire fuzz_delta_log fuzz_spark_log fuzz_avro_ocf fuzz_registry
FUZZ_SAN     = -fsanitize=address,undefined -fno-sanitize=vptr -fno-sanitize-recover=undefined -fno-omit-frame-pointer

fuzz-build:
	$(MAKE) -j$(JOBS) CC=clang CXX=clang++ BUILD=build-fuzz OPT=-O1 SAN="$(FUZZ_SAN) -fsanitize=fuzzer-no-link" build-fuzz/libstreamdrill.a
	@set -e; for t in $(FUZZ_TARGETS); do \
	  clang $(CPPFLAGS) -O1 -g $(FUZZ_SAN) -fsanitize=fuzzer-no-link $(WARN) -c -o build-fuzz/$$t.o tests/fuzz/$$t.c; \
	  clang++ -O1 -g $(FUZZ_SAN) -fsanitize=fuzzer -o build-fuzz/$$t build-fuzz/$$t.o build-fuzz/libstreamdrill.a $(LIBS); done
	@rm -rf build-fuzz/seed-scenario build-fuzz/seed-sink_row build-fuzz/seed-checkpoint build-fuzz/seed-wire
	@mkdir -p build-fuzz/seed-scenario build-fuzz/seed-sink_row build-fuzz/seed-checkpoint build-fuzz/seed-wire
	@find scenarios tests -name '*.drill' -exec cp {} build-fuzz/seed-scenario/ \;
	@split -l 1 -a 3 tests/scenarios/data/scans.jsonl build-fuzz/seed-sink_row/line-
	@split -l 3 -a 3 tests/scenarios/data/scans.jsonl build-fuzz/seed-sink_row/lines3-
	@cp tests/fuzz/regressions/sink_row/* build-fuzz/seed-sink_row/
	@cp tests/fuzz/seeds/checkpoint/* build-fuzz/seed-checkpoint/
	@cp tests/fuzz/seeds/wire/* tests/fuzz/regressions/wire/* build-fuzz/seed-wire/
	@set -e; for s in delta_log spark_log avro_ocf registry; do rm -rf build-fuzz/seed-$$s; mkdir -p build-fuzz/seed-$$s; \
	  cp tests/fuzz/seeds/$$s/* build-fuzz/seed-$$s/; \
	  if [ -d tests/fuzz/regressions/$$s ]; then cp tests/fuzz/regressions/$$s/* build-fuzz/seed-$$s/; fi; done

fuzz: deps
	@scripts/phase.sh "building the fuzz targets (clang, ASan, UBSan)" build-fuzz/logs/build.log $(MAKE) --no-print-directory fuzz-build
	@scripts/fuzz.sh $(FUZZ_SECONDS) $(JOBS) $(FUZZ_TARGETS)

# -O1 sees fewer bounds than -O2, so its format-truncation findings are
# warnings here: the -O2 build is the one -Werror holds to them
ASAN_SAN = -fsanitize=address,undefined -fno-omit-frame-pointer -Wno-error=format-truncation
# a leak or undefined behaviour ends a sanitized run with 86 (make asan and
# make mutate SANITIZE=1 run under these)
ASAN_ENV = ASAN_OPTIONS=detect_leaks=1:exitcode=86 UBSAN_OPTIONS=halt_on_error=1:exitcode=86:print_stacktrace=1
asan-build:
	$(MAKE) BUILD=build-asan SAN="$(ASAN_SAN)" OPT=-O1 $(BUILD:build=build-asan)/streamdrill $(TEST_NAMES:%=build-asan/tests/%)
asan: asan-build
	@set -e; for t in $(TEST_NAMES); do ASAN_OPTIONS=detect_leaks=1 build-asan/tests/$$t --jobs 1 --short-filename; done
	$(MAKE) all
	$(ASAN_ENV) python3 tests/run_scenarios.py --bin build-asan/streamdrill --no-real

clean:
	rm -rf build build-asan build-fuzz $(PIPELINES) streamdrill-out

.PHONY: install uninstall deb image deps-build all deps unit ecmare-diff protodyn-legacy-check scenario-tests lint mutate mutate-sample asan-build join-under-load test test-fast test-real-long demo bench bench-profile asan fuzz fuzz-build clean
.SECONDARY:

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
