#!/usr/bin/env bash
# A Docker engine for the container tests (tests/cluster/test_containers.py and friends)
# on a machine that has none: Debian's docker.io, run as root, its state in this project.
#
#   docker/engine.sh start    # make docker-engine: use the engine that answers, else start ours
#   docker/engine.sh stop     # make docker-engine-stop: stop ours (never anyone else's)
#   docker/engine.sh status   # exit 0 if some engine answers, and say which
#
# Where an engine already answers (DOCKER_HOST, or /var/run/docker.sock: a laptop, CI
# elsewhere) it is used as it is and nothing is installed or started. Otherwise, as root
# only, docker.io and debootstrap are installed with apt if missing and dockerd runs with
# its images and containers under .infra/docker/data, its sockets and pidfile under
# /run/schema-registry-py-<hash of this folder>/ (a unix socket path must stay short),
# no default bridge, and no iptables or ip_forward changes: the tests use their own
# internal networks and never publish ports. Tests find it through .infra/docker/engine.env.
# Without root, start says why and exits 0: the container tests then skip with the reason.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
STATE=$ROOT/.infra/docker
ENV_FILE=$STATE/engine.env
RUN=/run/schema-registry-py-$(printf '%s' "$ROOT" | sha256sum | cut -c1-10)
SOCK=$RUN/docker.sock
PIDFILE=$RUN/dockerd.pid
LOG=$STATE/dockerd.log

answers() {  # answers HOST: the engine at HOST replies to /_ping within 5 s
  command -v docker >/dev/null 2>&1 || return 1
  timeout 5 docker --host "$1" version --format '{{.Server.Version}}' >/dev/null 2>&1
}

ours_running() {
  [[ -f $PIDFILE ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

other_engine() {  # prints the host of an engine that is not ours and answers
  if [[ -n ${DOCKER_HOST:-} && ${DOCKER_HOST} != "unix://$SOCK" ]]; then
    answers "$DOCKER_HOST" && { echo "$DOCKER_HOST"; return 0; }
    return 1
  fi
  [[ -S /var/run/docker.sock ]] && answers unix:///var/run/docker.sock \
    && { echo unix:///var/run/docker.sock; return 0; }
  return 1
}

install_packages() {
  local missing=()
  for pkg in docker.io debootstrap; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  ((${#missing[@]})) || return 0
  echo "docker-engine: installing ${missing[*]} with apt" >&2
  local apt=(apt-get -o DPkg::Lock::Timeout=300 -y -q --no-install-recommends)
  DEBIAN_FRONTEND=noninteractive "${apt[@]}" install "${missing[@]}" >/dev/null \
    || { apt-get -o DPkg::Lock::Timeout=300 -q update >/dev/null \
         && DEBIAN_FRONTEND=noninteractive "${apt[@]}" install "${missing[@]}" >/dev/null; }
}

start() {
  if host=$(other_engine); then
    echo "docker-engine: using the Docker engine at $host"
    rm -f "$ENV_FILE"
    return 0
  fi
  if ours_running && answers "unix://$SOCK"; then
    echo "docker-engine: already running at unix://$SOCK"
    return 0
  fi
  if [[ $(id -u) != 0 ]]; then
    echo "docker-engine: no Docker engine answers and this is not root: not starting one" \
         "(the container tests will skip)" >&2
    return 0
  fi
  install_packages
  ours_running && stop  # a leftover that no longer answers
  mkdir -p "$STATE/data" "$RUN"
  echo "docker-engine: starting dockerd (data in $STATE/data, log in $LOG)" >&2
  # setsid: the engine outlives this script and make; `stop` ends it.
  setsid dockerd \
    --data-root "$STATE/data" --exec-root "$RUN/exec" --pidfile "$PIDFILE" \
    --host "unix://$SOCK" --bridge=none --iptables=false --ip-forward=false --ip-masq=false \
    --log-level warn </dev/null >>"$LOG" 2>&1 &
  for _ in $(seq 1 120); do
    if answers "unix://$SOCK"; then
      echo "DOCKER_HOST=unix://$SOCK" >"$ENV_FILE"
      echo "docker-engine: running at unix://$SOCK"
      return 0
    fi
    sleep 0.5
  done
  echo "docker-engine: dockerd did not answer within 60 s; see $LOG:" >&2
  tail -n 20 "$LOG" >&2
  stop
  return 1
}

stop() {
  rm -f "$ENV_FILE"
  if ! ours_running; then
    echo "docker-engine: ours is not running"
    return 0
  fi
  local pid
  pid=$(cat "$PIDFILE")
  # dockerd stops its containers and its containerd on SIGTERM.
  kill -TERM "$pid"
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "docker-engine: dockerd (pid $pid) ignored SIGTERM for 30 s; killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  # A killed dockerd leaves the containerd it started behind.
  local containerd=$RUN/exec/containerd/containerd.pid
  if [[ -f $containerd ]] && kill -0 "$(cat "$containerd")" 2>/dev/null; then
    kill -TERM "$(cat "$containerd")" 2>/dev/null || true
  else
    # Sockets and runtime state of processes that are gone; dockerd leaves its bind
    # mount of the host's network namespace (exec/netns/default) behind.
    awk -v run="$RUN/" 'index($2, run) == 1 {print $2}' /proc/mounts | while read -r mnt; do
      umount "$mnt" 2>/dev/null || true
    done
    rm -rf "$RUN"
  fi
  echo "docker-engine: stopped"
}

status() {
  if host=$(other_engine); then
    echo "a Docker engine answers at $host"
  elif ours_running && answers "unix://$SOCK"; then
    echo "our Docker engine answers at unix://$SOCK"
  else
    echo "no Docker engine answers"
    return 1
  fi
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
