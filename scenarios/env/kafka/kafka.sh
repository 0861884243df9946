#!/bin/sh
# A single-node Apache Kafka broker in KRaft mode (broker and controller in
# one JVM) on 127.0.0.1, for streamdrill's tests and CI. Its jars come from
# Maven Central through scenarios/env/kafka/pom.xml and are cached in
# .cache/kafka/libs, or in the folder SD_KAFKA_LIBS names (a cache kept
# outside the checkout, shared by several). Its topics keep their records
# for ever (log.retention.ms=-1): a pipeline that stamps its output with
# event times (Kafka Streams does) and a generator's dates days back would
# otherwise see a drill's output deleted before it is read.
#
#   kafka.sh fetch                          download the jars (once)
#   kafka.sh start DIR [PORT] [OWNER_PID] [PROXY_PORT]
#                                           format DIR, start, wait until it answers,
#                                           print the bootstrap address; with OWNER_PID
#                                           the broker is killed when that process ends;
#                                           with PROXY_PORT a second listener is opened
#                                           that advertises 127.0.0.1:PROXY_PORT, and a
#                                           second line "proxy 127.0.0.1:PROXY_PORT=127.0.0.1:P"
#                                           tells streamdrill --proxy what to forward
#   kafka.sh start-secure DIR [PORT] [OWNER_PID] [PROXY_PORT]
#                                           the same broker (its PLAINTEXT listener stays: the
#                                           broker's own traffic and the drills that want no
#                                           TLS), and beside it one listener per shape of a
#                                           managed Kafka's client access, each printed on a line
#                                           "secure SHAPE 127.0.0.1:P DIR/secure/SHAPE.properties"
#                                           after the bootstrap line:
#                                             eventhubs  SASL_SSL, PLAIN, user $ConnectionString,
#                                                        the password a connection string
#                                             confluent  SASL_SSL, PLAIN, an API key and secret
#                                             msk-scram  SASL_SSL, SCRAM-SHA-512 (the credential
#                                                        made by kafka-storage format --add-scram;
#                                                        librdkafka before 2.6.1 cannot log in to
#                                                        Kafka 4.x with SCRAM: librdkafka#4895)
#                                             msk-mtls   SSL, a client certificate required
#                                           SHAPE.properties is what a librdkafka client needs
#                                           (security.protocol, sasl.*, ssl.*), mode 0600: the
#                                           file `streamdrill run --kafka-config` takes. The CA,
#                                           the broker's certificate (127.0.0.1, localhost) and
#                                           the client's (its key encrypted, ssl.key.password)
#                                           are made with openssl in DIR/secure, the secrets
#                                           fresh each start; DIR/secure/untrusted-ca.pem is a
#                                           CA that signed nothing here, for testing refusals
#   kafka.sh stop DIR                       stop it (SIGTERM, then SIGKILL)
#   kafka.sh cluster DIR [N] [OWNER_PID]    N brokers (default 3), each a KRaft broker and
#                                           controller of one quorum, topics replicated 3 times
#                                           with min.insync.replicas=2 by default; prints the
#                                           bootstrap list and writes DIR/cluster, which
#                                           `streamdrill run --cluster DIR` reads (each
#                                           broker's id, address and pid file, how to
#                                           start one again, and the file that cuts
#                                           one off from the others: the brokers reach
#                                           each other through `streamdrill _links DIR`)
#   kafka.sh broker-start DIR ID            start broker ID of the cluster in DIR again (after
#                                           a kill or a stop), on its own data; returns once it
#                                           has started
#   kafka.sh cluster-stop DIR               stop every broker of the cluster
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
libs="${SD_KAFKA_LIBS:-$root/.cache/kafka/libs}"
. "$here/../daemons.sh"

fetch() {
    "$here/../fetch-jars.sh" "$here/pom.xml" "$libs" "the Kafka jars"
}

# streamdrill_bin: the streamdrill that runs a cluster's link proxies:
# $STREAMDRILL, this checkout's build, or the one on PATH
streamdrill_bin() {
    if [ -n "${STREAMDRILL:-}" ]; then echo "$STREAMDRILL"
    elif [ -x "$root/build/streamdrill" ]; then echo "$root/build/streamdrill"
    elif command -v streamdrill >/dev/null 2>&1; then command -v streamdrill
    else echo "kafka.sh cluster: streamdrill runs the links between the brokers; build it (make) or set STREAMDRILL" >&2; exit 2
    fi
}

# log_conf DIR: the broker in DIR logs to DIR/server.log
log_conf() {
    cat > "$1/log4j2.properties" <<LOG
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = $1/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.apache.name = org.apache.kafka
logger.apache.level = WARN
logger.raft.name = org.apache.kafka.raft
logger.raft.level = INFO
LOG
}

# wait_started DIR PID NAME TRIES: wait (TRIES tenths of a second at most)
# until the broker logging to DIR/server.log says it started; if it dies or
# takes longer, show its last lines, kill it and fail
wait_started() {
    i=0
    while ! grep -q "Kafka Server started" "$1/server.log" 2>/dev/null; do
        i=$((i + 1))
        if ! alive "$2" || [ $i -gt "$4" ]; then
            echo "kafka.sh: $3 did not start; last lines of $1/server.log and stdout.log:" >&2
            tail -20 "$1/server.log" "$1/stdout.log" >&2 2>/dev/null || true
            kill -9 "$2" 2>/dev/null || true
            return 1
        fi
        sleep 0.1
    done
}

# certs DIR: a CA, the broker's certificate and key for 127.0.0.1 and
# localhost (PEM, the key unencrypted PKCS#8, as Kafka's PEM key store takes
# it without ssl.key.password), a client certificate whose key is encrypted
# with DIR/client.pass, and a second CA that signed nothing
certs() {
    d=$1
    mkdir -p "$d"
    (
        umask 077
        cd "$d"
        openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=streamdrill test CA" \
            -keyout ca.key -out ca.pem 2>/dev/null
        openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=streamdrill untrusted CA" \
            -keyout untrusted-ca.key -out untrusted-ca.pem 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout broker.key -out broker.csr 2>/dev/null
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' > broker.ext
        openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 -extfile broker.ext \
            -out broker.pem 2>/dev/null
        openssl pkcs8 -topk8 -nocrypt -in broker.key -out broker.p8
        cat broker.p8 broker.pem ca.pem > broker-keystore.pem
        openssl rand -hex 16 > client.pass
        openssl req -newkey rsa:2048 -passout file:client.pass -subj "/CN=streamdrill-client" \
            -keyout client.key -out client.csr 2>/dev/null
        printf 'extendedKeyUsage=clientAuth\n' > client.ext
        openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 -extfile client.ext \
            -out client.pem 2>/dev/null
        rm -f ./*.csr ./*.ext ./*.srl broker.key
    ) || { echo "kafka.sh start-secure: openssl could not make the certificates in $d" >&2; exit 1; }
}

# secure_conf DIR: the listeners of start-secure (their ports in $secure_ports), the
# client properties files, and the SCRAM credential for the storage format (in $scram)
secure_conf() {
    d=$1/secure
    certs "$d"
    umask_was=$(umask); umask 077
    # the secrets, fresh each start
    key=$(openssl rand -hex 8 | tr '[:lower:]' '[:upper:]'); apisecret=$(openssl rand -base64 48 | tr -d '\n/+=')
    sas=$(openssl rand -base64 32 | tr -d '\n')
    conn="Endpoint=sb://streamdrill.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=$sas"
    scrampass=$(openssl rand -hex 24)
    for shape in eventhubs confluent msk-scram msk-mtls; do
        q=$(free_port)
        while case " $port $cport $proxy ${pport:-} $secure_ports " in *" $q "*) true ;; *) false ;; esac; do q=$(free_port); done
        secure_ports="$secure_ports $q"
        name=$(echo "$shape" | tr -d - | tr '[:lower:]' '[:upper:]')
        listeners="$listeners,$name://127.0.0.1:$q"
        advertised="$advertised,$name://127.0.0.1:$q"
        case $shape in msk-mtls) protocols="$protocols,$name:SSL" ;; *) protocols="$protocols,$name:SASL_SSL" ;; esac
        f="$d/$shape.properties"
        {
            echo "# $shape: the listener 127.0.0.1:$q of the broker in $1 (kafka.sh start-secure)"
            case $shape in
                msk-mtls) echo "security.protocol=SSL" ;;
                *) echo "security.protocol=SASL_SSL" ;;
            esac
            # shellcheck disable=SC2016 # $ConnectionString is Event Hubs' user name, as it is
            case $shape in
                eventhubs) printf 'sasl.mechanisms=PLAIN\nsasl.username=$ConnectionString\nsasl.password=%s\n' "$conn" ;;
                confluent) printf 'sasl.mechanisms=PLAIN\nsasl.username=%s\nsasl.password=%s\n' "$key" "$apisecret" ;;
                msk-scram) printf 'sasl.mechanisms=SCRAM-SHA-512\nsasl.username=streamdrill\nsasl.password=%s\n' "$scrampass" ;;
                msk-mtls) printf 'ssl.certificate.location=%s\nssl.key.location=%s\nssl.key.password=%s\n' \
                              "$d/client.pem" "$d/client.key" "$(cat "$d/client.pass")" ;;
            esac
            echo "ssl.ca.location=$d/ca.pem"
        } > "$f"
        chmod 600 "$f"
        echo "$shape 127.0.0.1:$q $f" >> "$d/shapes"
    done
    # the broker's side: one key store and trust store (PEM) for every TLS listener;
    # each SASL listener its own mechanism and users (JAAS, in server.properties: mode 0600)
    cat > "$d/server.properties" <<PROPS
ssl.keystore.type=PEM
ssl.keystore.location=$d/broker-keystore.pem
ssl.truststore.type=PEM
ssl.truststore.location=$d/ca.pem
listener.name.mskmtls.ssl.client.auth=required
listener.name.eventhubs.sasl.enabled.mechanisms=PLAIN
listener.name.eventhubs.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_\$ConnectionString="$conn";
listener.name.confluent.sasl.enabled.mechanisms=PLAIN
listener.name.confluent.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$key="$apisecret";
listener.name.mskscram.sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.mskscram.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
PROPS
    scram="SCRAM-SHA-512=[name=streamdrill,password=$scrampass]"
    umask "$umask_was"
}

start() {
    dir=$1; port=${2:-}; owner=${3:-}; proxy=${4:-}; secure=${SECURE:-}
    fetch
    [ -n "$port" ] || port=$(free_port)
    while [ "$port" = "$proxy" ]; do port=$(free_port); done
    cport=$(free_port)
    while [ "$cport" = "$port" ] || [ "$cport" = "$proxy" ]; do cport=$(free_port); done
    listeners="PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
    advertised="PLAINTEXT://127.0.0.1:$port"
    protocols="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    if [ -n "$proxy" ]; then
        pport=$(free_port)
        while [ "$pport" = "$port" ] || [ "$pport" = "$cport" ] || [ "$pport" = "$proxy" ]; do pport=$(free_port); done
        listeners="$listeners,PROXIED://127.0.0.1:$pport"
        advertised="$advertised,PROXIED://127.0.0.1:$proxy"
        protocols="$protocols,PROXIED:PLAINTEXT"
    fi
    rm -rf "$dir"; mkdir -p "$dir/data"
    secure_ports=""; scram=""
    [ -z "$secure" ] || secure_conf "$dir"
    cat > "$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=$listeners
advertised.listeners=$advertised
controller.listener.names=CONTROLLER
listener.security.protocol.map=$protocols
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=3
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
group.initial.rebalance.delay.ms=0
log.retention.ms=-1
PROPS
    if [ -n "$secure" ]; then
        cat "$dir/secure/server.properties" >> "$dir/server.properties"
        chmod 600 "$dir/server.properties"
    fi
    log_conf "$dir"
    cp="$libs/*"
    java -cp "$cp" kafka.tools.StorageTool format -t "$(java -cp "$cp" kafka.tools.StorageTool random-uuid)" \
        -c "$dir/server.properties" ${scram:+--add-scram "$scram"} >"$dir/format.log" 2>&1 || { cat "$dir/format.log" >&2; exit 1; }
    java -Xms256m -Xmx768m -XX:+UseG1GC -Dlog4j2.configurationFile="$dir/log4j2.properties" \
        -cp "$cp" kafka.Kafka "$dir/server.properties" >"$dir/stdout.log" 2>&1 &
    pid=$!
    echo "$pid" > "$dir/pid"
    watch_owner "$owner" "$pid"  # the broker must not outlive whoever started it
    wait_started "$dir" "$pid" "the broker" 600 || exit 1
    echo "127.0.0.1:$port" > "$dir/bootstrap"
    echo "127.0.0.1:$port"
    if [ -n "$proxy" ]; then echo "proxy 127.0.0.1:$proxy=127.0.0.1:$pport"; fi
    if [ -n "$secure" ]; then sed 's/^/secure /' "$dir/secure/shapes"; fi
}

# node DIR ID VOTERS PORT CPORT NBROKERS RPORT RLINK CLINK: one broker and
# controller of a cluster, its configuration and log settings in DIR/ID.
# Clients use PORT; the other brokers reach its inter-broker listener
# (RPORT) at RLINK and its controller listener (CPORT) at CLINK (in VOTERS,
# and advertised: the quorum passes a leader's advertised controller
# endpoint on to its followers): ports of the link proxies (`streamdrill
# _links`), so that a drill can cut it off from them while clients still
# reach it.
node_conf() {
    d=$1/$2; n=$6
    mkdir -p "$d/data"
    rf=3; [ "$n" -ge 3 ] || rf=$n
    isr=2; [ "$n" -ge 2 ] || isr=1
    cat > "$d/server.properties" <<PROPS
process.roles=broker,controller
node.id=$2
controller.quorum.voters=$3
listeners=PLAINTEXT://127.0.0.1:$4,REPLICATION://127.0.0.1:$7,CONTROLLER://127.0.0.1:$5
advertised.listeners=PLAINTEXT://127.0.0.1:$4,REPLICATION://127.0.0.1:$8,CONTROLLER://127.0.0.1:$9
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=REPLICATION
log.dirs=$d/data
num.partitions=3
default.replication.factor=$rf
min.insync.replicas=$isr
auto.create.topics.enable=true
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
transaction.state.log.num.partitions=4
group.initial.rebalance.delay.ms=0
log.retention.ms=-1
replica.lag.time.max.ms=10000
PROPS
    log_conf "$d"
}

# launch DIR ID: start the broker in DIR/ID (already formatted), its pid in
# DIR/ID/pid, killed when the cluster's owner (DIR/owner) ends
launch() {
    d=$1/$2
    [ ! -f "$d/server.log" ] || mv "$d/server.log" "$d/server.log.1"
    java -Xms192m -Xmx512m -XX:+UseG1GC -XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile="$d/log4j2.properties" \
        -cp "$libs/*" kafka.Kafka "$d/server.properties" >"$d/stdout.log" 2>&1 </dev/null &
    bpid=$!
    echo "$bpid" > "$d/pid"
    owner_watch "$1" "$bpid"
}

# started DIR ID: wait until broker ID of the cluster in DIR says it started
started() {
    wait_started "$1/$2" "$(cat "$1/$2/pid")" "broker $2" 1200
}

cluster() {
    dir=$1; n=${2:-3}; owner=${3:-}
    fetch
    case "$n" in [1-9]) ;; *) echo "kafka.sh cluster: N must be 1 to 9, found $n" >&2; exit 2 ;; esac
    rm -rf "$dir"; mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    [ -z "$owner" ] || echo "$owner" > "$dir/owner"
    sd=$(streamdrill_bin) && [ -n "$sd" ] || exit 2
    used=" "
    voters=""
    # p: clients; r, c: the inter-broker and controller listeners; rl, cl:
    # the link proxies in front of them
    for id in $(seq 1 "$n"); do
        for which in p c r rl cl; do
            q=$(free_port)
            while case "$used" in *" $q "*) true ;; *) false ;; esac; do q=$(free_port); done
            used="$used$q "
            eval "$which$id=$q"
        done
        eval "voters=\"\${voters:+\$voters,}$id@127.0.0.1:\$cl$id\""
    done
    boot=""
    : > "$dir/links"
    for id in $(seq 1 "$n"); do
        eval "port=\$p$id; cport=\$c$id; rport=\$r$id; rlink=\$rl$id; clink=\$cl$id"
        # shellcheck disable=SC2154 # rport, rlink and clink are set by the eval above
        node_conf "$dir" "$id" "$voters" "$port" "$cport" "$n" "$rport" "$rlink" "$clink"
        boot="${boot:+$boot,}127.0.0.1:$port"
        { echo "broker $id $dir/$id/pid"
          echo "link $id 127.0.0.1:$rlink=127.0.0.1:$rport"
          echo "link $id 127.0.0.1:$clink=127.0.0.1:$cport"; } >> "$dir/links"
    done
    # the links first: the brokers reach each other only through them
    "$sd" _links "$dir" >"$dir/links.log" 2>&1 </dev/null &
    lpid=$!
    echo "$lpid" > "$dir/links.pid"
    sleep 0.2
    alive "$lpid" || { echo "kafka.sh cluster: the link proxies did not start:" >&2; cat "$dir/links.log" >&2; exit 1; }
    cid=$(java -cp "$libs/*" kafka.tools.StorageTool random-uuid)
    for id in $(seq 1 "$n"); do
        java -cp "$libs/*" kafka.tools.StorageTool format -t "$cid" -c "$dir/$id/server.properties" >"$dir/$id/format.log" 2>&1 \
            || { cat "$dir/$id/format.log" >&2; exit 1; }
    done
    for id in $(seq 1 "$n"); do launch "$dir" "$id"; done
    for id in $(seq 1 "$n"); do started "$dir" "$id" || { cluster_stop "$dir"; exit 1; }; done
    {
        echo "# a Kafka cluster started by $here/kafka.sh (read by streamdrill run --cluster $dir)"
        echo "bootstrap $boot"
        for id in $(seq 1 "$n"); do eval "echo \"broker $id 127.0.0.1:\$p$id $dir/$id/pid\""; done
        echo "start $here/kafka.sh broker-start $dir {id}"
        echo "isolate $dir/cut"
    } > "$dir/cluster"
    echo "$boot" > "$dir/bootstrap"
    echo "$boot"
}

broker_start() {
    dir=$1; id=$2
    [ -f "$dir/$id/server.properties" ] || { echo "kafka.sh broker-start: no broker $id in $dir" >&2; exit 2; }
    if [ -f "$dir/$id/pid" ] && alive "$(cat "$dir/$id/pid")"; then
        echo "kafka.sh broker-start: broker $id is running already (pid $(cat "$dir/$id/pid"))" >&2; exit 1
    fi
    launch "$dir" "$id"
    started "$dir" "$id"
}

cluster_stop() {
    dir=$1
    if [ -f "$dir/links.pid" ]; then kill "$(cat "$dir/links.pid")" 2>/dev/null || true; rm -f "$dir/links.pid"; fi
    for d in "$dir"/*/; do
        [ -f "$d/pid" ] || continue
        kill -CONT "$(cat "$d/pid")" 2>/dev/null || true
        stop "${d%/}"
    done
}

stop() {
    dir=$1
    [ -f "$dir/pid" ] || return 0
    pid=$(cat "$dir/pid")
    kill "$pid" 2>/dev/null || true
    i=0
    while alive "$pid" && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/pid"
}

case "${1:-}" in
    fetch) fetch ;;
    start) shift; start "$@" ;;
    start-secure) shift; SECURE=1 start "$@" ;;
    stop) shift; stop "$@" ;;
    cluster) shift; cluster "$@" ;;
    broker-start) shift; broker_start "$@" ;;
    cluster-stop) shift; cluster_stop "$@" ;;
    *) echo "usage: kafka.sh fetch | start DIR [PORT] [OWNER_PID] [PROXY_PORT] | start-secure DIR [PORT] [OWNER_PID] [PROXY_PORT] | stop DIR | cluster DIR [N] [OWNER_PID] | broker-start DIR ID | cluster-stop DIR" >&2; exit 2 ;;
esac
