#!/bin/bash
# Write server.properties, format the storage once, then become the broker.
#
# Every KAFKA_CFG_<NAME> variable sets property <name> (lower case, `_` becomes `.`),
# over the single-node defaults below, e.g. KAFKA_CFG_ADVERTISED_LISTENERS.
# KAFKA_CLUSTER_ID names the cluster when the storage is formatted; KAFKA_HEAP the -Xmx.
# By default the broker advertises the container's first address.
set -euo pipefail
home=/var/lib/kafka
conf=$home/server.properties
mkdir -p "$home/data"
{
  cat <<PROPERTIES
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:9093
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://127.0.0.1:9093
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$home/data
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
background.threads=4
broker.heartbeat.interval.ms=500
broker.session.timeout.ms=4000
advertised.listeners=PLAINTEXT://$(hostname -I 2>/dev/null | cut -d' ' -f1 | grep . || echo 127.0.0.1):9092
PROPERTIES
  # Later lines win in a Java properties file.
  env | sed -n 's/^KAFKA_CFG_\([A-Z0-9_]*\)=\(.*\)$/\1=\2/p' | while IFS='=' read -r name value; do
    printf '%s=%s\n' "$(printf '%s' "$name" | tr 'A-Z_' 'a-z.')" "$value"
  done
} >"$conf"
java=(java -Xmx"${KAFKA_HEAP:-512m}" -XX:+UseSerialGC -XX:+ExitOnOutOfMemoryError
      -Djava.awt.headless=true -Djava.net.preferIPv4Stack=true
      -Dlog4j2.configurationFile=/opt/kafka/log4j2.properties -cp '/opt/kafka/libs/*')
if [[ ! -f $home/data/meta.properties ]]; then
  "${java[@]}" kafka.tools.StorageTool format -t "${KAFKA_CLUSTER_ID:-c2NoZW1hLXJlZ2lzdHJ5MA}" \
    -c "$conf" --ignore-formatted
fi
exec "${java[@]}" -Dlog4j2.shutdownHookEnabled=false kafka.Kafka "$conf"
