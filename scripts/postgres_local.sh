#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests: its own cluster in a folder, on 127.0.0.1.
#
#   eval "$(scripts/postgres_local.sh start [DIR])"    start it, export its URL
#   scripts/postgres_local.sh env [DIR]                 print the export lines again
#   scripts/postgres_local.sh restart [DIR]             crash it (-m immediate) and start it again
#   scripts/postgres_local.sh stop [DIR]                stop it (by the PID in its pid file)
#
# DIR defaults to /tmp/synaptum-postgres. `start` prints, on stdout and nothing else:
#
#   export SYNAPTUM_TEST_POSTGRES_URL=postgresql://synaptum@127.0.0.1:PORT/synaptum
#   export SYNAPTUM_TEST_POSTGRES_DIR=DIR
#
# Installs Debian's `postgresql` package when no server is found (as root, with apt-get).
# The server never runs as root (PostgreSQL refuses to): as root it runs as the `postgres`
# user the package creates. It accepts connections from this machine only, without a
# password, and runs with fsync=off: it survives its processes being killed, not a power
# cut. It is for tests, never for data you want to keep.
set -euo pipefail

command=${1:-start}
dir=${2:-/tmp/synaptum-postgres}
data=$dir/data

say() { echo "postgres_local: $*" >&2; }

# pg_ctl -w gives a server 60 s to start or stop by default: a clock a machine busy with other
# work can run out of. Ten minutes only ends a hang (as tests/bounds.py's HANG).
export PGCTLTIMEOUT=${PGCTLTIMEOUT:-600}

find_bindir() {
    local found
    found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    if [[ -z $found ]] && command -v pg_ctl >/dev/null 2>&1; then
        found=$(dirname "$(readlink -f "$(command -v pg_ctl)")")
    fi
    echo "$found"
}

install_server() {
    if [[ $(id -u) -ne 0 ]]; then
        say "no PostgreSQL server found; install it first: sudo apt-get install postgresql"
        exit 1
    fi
    say "installing Debian's postgresql package"
    # Only our own cluster is wanted: the package must not create and start its default one.
    mkdir -p /etc/postgresql-common/createcluster.d
    echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.d/synaptum.conf
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
}

# as_owner CMD...: run CMD as the user that owns the cluster (never root).
as_owner() {
    if [[ $(id -u) -eq 0 ]]; then
        (cd / && runuser -u postgres -- "$@")  # postgres may not enter the caller's folder
    else
        "$@"
    fi
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

print_env() {
    local port
    port=$(sed -n 's/^port = //p' "$data/postgresql.auto.conf" 2>/dev/null || true)
    if [[ -z $port ]]; then
        say "no cluster in $dir: run '$0 start $dir' first"
        exit 1
    fi
    echo "export SYNAPTUM_TEST_POSTGRES_URL=postgresql://synaptum@127.0.0.1:$port/synaptum"
    echo "export SYNAPTUM_TEST_POSTGRES_DIR=$dir"
}

running() {
    [[ -d $data ]] && as_owner "$bindir/pg_ctl" -s -D "$data" status >/dev/null 2>&1
}

bindir=$(find_bindir)
case $command in
start)
    if [[ -z $bindir ]]; then
        install_server
        bindir=$(find_bindir)
    fi
    if [[ ! -f $data/PG_VERSION ]]; then
        mkdir -p "$dir"
        [[ $(id -u) -eq 0 ]] && chown postgres: "$dir"
        as_owner "$bindir/initdb" -D "$data" -U synaptum --auth=trust --encoding=UTF8 --locale=C.UTF-8 --no-sync >/dev/null
        {
            echo "listen_addresses = '127.0.0.1'"
            echo "port = 0"
            echo "unix_socket_directories = '$dir'"
            echo "fsync = off"
            echo "max_connections = 100"
        } | as_owner tee -a "$data/postgresql.auto.conf" >/dev/null
    fi
    if ! running; then
        # a port free now (the one of an earlier start may have been taken since)
        as_owner sed -i "s/^port = .*/port = $(free_port)/" "$data/postgresql.auto.conf"
        as_owner "$bindir/pg_ctl" -s -D "$data" -l "$dir/server.log" -w start >&2
        as_owner "$bindir/createdb" -h "$dir" -p "$(sed -n 's/^port = //p' "$data/postgresql.auto.conf")" \
            -U synaptum synaptum 2>/dev/null || true  # exists already after a restart
    fi
    print_env
    ;;
env)
    print_env
    ;;
restart)
    as_owner "$bindir/pg_ctl" -s -D "$data" -m immediate -w stop >&2
    as_owner "$bindir/pg_ctl" -s -D "$data" -l "$dir/server.log" -w start >&2
    ;;
stop)
    if running; then
        as_owner "$bindir/pg_ctl" -s -D "$data" -m fast -w stop >&2
    fi
    ;;
*)
    say "unknown command '$command'; use start, env, restart or stop"
    exit 2
    ;;
esac
