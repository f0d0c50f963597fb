#!/usr/bin/env bash
# Installs what splitbrain needs and a fresh machine lacks: redis-server
# and redis-sentinel, zookeeper and etcd-server (Debian's packages), a C compiler for the clock shim, chromium, in
# which the report tests render pages, and the libraries of the built-in
# lock drivers (Python, PHP, Java). Idempotent: it installs nothing that
# is already there.
set -euo pipefail

# Commits in this checkout go through scripts/check-tree.sh, which refuses
# build outputs (a 35 MB binary was once committed by accident).
if git -C "$(dirname "$0")/.." rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$(dirname "$0")/.." config core.hooksPath .githooks
fi

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
# The Sentinel stories run Debian's redis-sentinel beside redis-server.
command -v redis-sentinel >/dev/null 2>&1 || missing+=(redis-sentinel)
# The control group: ZooKeeper 3.8 and etcd 3.4 ensembles. Debian's
# zookeeper package holds the server's jar (zookeeperd only adds a
# system-wide service on port 2181, which splitbrain never uses).
{ [ -f /usr/share/java/zookeeper.jar ] && command -v java >/dev/null 2>&1; } || missing+=(zookeeper)
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
command -v cc >/dev/null 2>&1 || missing+=(gcc)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# The pages render in the fonts chromium recommends (installed here by
# name, since apt below installs no recommendations).
[ -d /usr/share/fonts/truetype/liberation ] || missing+=(fonts-liberation)
# The redis-py lock driver runs on Debian's python3 with Debian's
# python3-redis (another python3 earlier on PATH may not see it).
/usr/bin/python3 -c 'import redis' >/dev/null 2>&1 || missing+=(python3-redis)
# The other built-in lock drivers (driver/builtin), each from Debian's
# packages: kazoo's Lock (Python), Symfony's Lock, Laravel's cache lock and
# malkusch/lock's PHPRedisMutex (PHP, on phpredis), Apache Curator's InterProcessMutex (Java), tooz's
# etcd lock (Python, OpenStack's coordination library).
[ -d /usr/lib/python3/dist-packages/kazoo ] || missing+=(python3-kazoo)
[ -d /usr/lib/python3/dist-packages/tooz ] || missing+=(python3-tooz)
command -v php >/dev/null 2>&1 || missing+=(php-cli)
ls /usr/lib/php/*/redis.so >/dev/null 2>&1 || missing+=(php-redis)
[ -d /usr/share/php/Symfony/Component/Lock ] || missing+=(php-symfony-lock)
[ -d /usr/share/php/Illuminate/Cache ] || missing+=(php-illuminate-cache)
[ -d /usr/share/php/Illuminate/Redis ] || missing+=(php-illuminate-redis)
[ -d /usr/share/php/Malkusch/Lock ] || missing+=(php-malkusch-lock)
[ -f /usr/share/java/curator-recipes.jar ] || missing+=(libcurator-recipes-java)
command -v go >/dev/null 2>&1 || { echo "setup: Go is not installed (https://go.dev/dl/)" >&2; exit 1; }
# The Go modules (go.sum) into the module cache, so that building and
# testing need no network: without this, make test on a fresh machine
# first fetches them (400 MB, 13 s here, 2026-11-28) before anything
# compiles. Nothing to do when they are already there.
(cd "$(dirname "$0")/.." && go mod download) || { echo "setup: go mod download failed" >&2; exit 1; }

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "setup: need root (or sudo) to install ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# Without the packages they recommend: 125 packages instead of 233 on a
# fresh machine (2026-11-28: printing, Samba, Avahi, Perl's web stack and
# GTK's introspection came with chromium's and the libraries'
# recommendations; nothing here uses them).
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian's package may start a system-wide redis-server where systemd runs;
# splitbrain never uses it (its nodes run on their own ports with their own
# password), so it is left alone.
command -v redis-server >/dev/null 2>&1 || { echo "setup: redis-server still missing after install" >&2; exit 1; }
command -v redis-sentinel >/dev/null 2>&1 || { echo "setup: redis-sentinel still missing after install" >&2; exit 1; }
command -v chromium >/dev/null 2>&1 || { echo "setup: chromium still missing after install" >&2; exit 1; }
[ -f /usr/share/java/zookeeper.jar ] || { echo "setup: zookeeper still missing after install" >&2; exit 1; }
command -v etcd >/dev/null 2>&1 || { echo "setup: etcd-server still missing after install" >&2; exit 1; }
/usr/bin/python3 -c 'import redis' >/dev/null 2>&1 || { echo "setup: python3-redis still missing after install" >&2; exit 1; }
[ -d /usr/lib/python3/dist-packages/kazoo ] || { echo "setup: python3-kazoo still missing after install" >&2; exit 1; }
[ -d /usr/lib/python3/dist-packages/tooz ] || { echo "setup: python3-tooz still missing after install" >&2; exit 1; }
[ -d /usr/share/php/Symfony/Component/Lock ] || { echo "setup: php-symfony-lock still missing after install" >&2; exit 1; }
[ -d /usr/share/php/Malkusch/Lock ] || { echo "setup: php-malkusch-lock still missing after install" >&2; exit 1; }
[ -f /usr/share/java/curator-recipes.jar ] || { echo "setup: libcurator-recipes-java still missing after install" >&2; exit 1; }
