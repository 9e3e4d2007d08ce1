#!/usr/bin/env bash
# Smoke test of the container image: build it, run it read-only as non-root, wait for /readyz,
# check a count against the CLI's answer and /metrics, check the HEALTHCHECK, stop it with SIGTERM
# (exit 0 within the grace period), and validate docker-compose.yml.
#
#   bash deploy/smoke.sh            # as root on a Debian machine; installs docker.io if missing
#                                   # (uses the active venv's toksvc, else .venv's, else makes .venv)
#
# Without Docker Hub: the base image is built locally (debootstrap minbase, then docker import),
# builds use the classic builder with host networking, and the host's CA bundle goes into certs/
# for the build stage (registries are reached through a TLS proxy only the host trusts).
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${SMOKE_PORT:-18765}
IMAGE=toksvc:smoke
NAME=toksvc-smoke
PY=${PYTHON:-python3}

log() { printf '\n== %s\n' "$*"; }
cleanup() {
  docker rm -f "$NAME" >/dev/null 2>&1 || true
  rm -f certs/host-ca.crt
}
trap cleanup EXIT

if ! docker info >/dev/null 2>&1; then
  log "starting a Docker engine"
  if ! command -v dockerd >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
  fi
  (dockerd --bridge=none >/tmp/toksvc-smoke-dockerd.log 2>&1 &)
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null
fi

if ! docker image inspect debian:bookworm-slim >/dev/null 2>&1; then
  log "building the debian:bookworm-slim base image with debootstrap"
  command -v debootstrap >/dev/null || {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
  root=$(mktemp -d)
  debootstrap --variant=minbase bookworm "$root" >/dev/null
  tar -C "$root" -c . | docker import - debian:bookworm-slim >/dev/null
  rm -rf "$root"
fi

log "building $IMAGE"
cp /etc/ssl/certs/ca-certificates.crt certs/host-ca.crt
DOCKER_BUILDKIT=0 docker build --network host -q -t "$IMAGE" . >/dev/null
docker run --rm --entrypoint id "$IMAGE" | grep -q 'uid=10001' || { echo "image does not run as uid 10001"; exit 1; }

log "running it read-only on 127.0.0.1:$PORT"
docker run -d --name "$NAME" --network host --read-only --tmpfs /tmp \
  -e TOKSVC_HOST=127.0.0.1 -e TOKSVC_PORT="$PORT" -e TOKSVC_WORKERS=2 "$IMAGE" >/dev/null
"$PY" - "$PORT" <<'PYEOF'
import json, sys, time, urllib.request, urllib.error
base = f"http://127.0.0.1:{sys.argv[1]}"
deadline = time.monotonic() + 120
while True:
    try:
        with urllib.request.urlopen(base + "/readyz", timeout=2) as r:
            if r.status == 200:
                break
    except (urllib.error.URLError, ConnectionError, OSError):
        pass
    if time.monotonic() > deadline:
        sys.exit("not ready within 120 s")
    time.sleep(0.5)
print("ready:", urllib.request.urlopen(base + "/readyz").read().decode())
PYEOF

log "count over HTTP equals the CLI's count"
TOKSVC=$(command -v toksvc || true)
if [ -z "$TOKSVC" ]; then  # no active venv: use the repository's, or make one
  [ -x .venv/bin/toksvc ] || { "$PY" -m venv .venv && .venv/bin/pip install -q -e .; }
  TOKSVC=.venv/bin/toksvc
fi
TEXT="Smoke test: 中文, emoji 🙂, code x = f(y) ** 2."
cli=$("$TOKSVC" count cl100k_base "$TEXT")
http=$("$PY" - "$PORT" "$TEXT" <<'PYEOF'
import json, sys, urllib.request
req = urllib.request.Request(f"http://127.0.0.1:{sys.argv[1]}/v1/tokenizers/cl100k_base/count",
                             data=json.dumps({"text": sys.argv[2]}).encode(),
                             headers={"content-type": "application/json"})
print(json.load(urllib.request.urlopen(req))["count"])
PYEOF
)
echo "cli=$cli http=$http"
[ "$cli" = "$http" ]

log "/metrics"
"$PY" - "$PORT" <<'PYEOF'
import sys, time, urllib.request
for _ in range(60):  # toksvc_store_loaded is the minimum over the workers: wait for every one
    text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics").read().decode()
    if "toksvc_store_loaded 1.0" in text:
        break
    time.sleep(1)
for needle in ('toksvc_tokenizer_info{', 'toksvc_tokens_total{operation="count",tokenizer="cl100k_base@1"}',
               'toksvc_store_loaded 1.0'):
    assert needle in text, needle
print("metrics ok")
PYEOF

log "HEALTHCHECK"
for _ in $(seq 60); do
  status=$(docker inspect -f '{{.State.Health.Status}}' "$NAME")
  [ "$status" = healthy ] && break
  sleep 1
done
echo "health: $status"; [ "$status" = healthy ]

log "SIGTERM stops it cleanly"
start=$(date +%s)
docker stop -t 25 "$NAME" >/dev/null
code=$(docker inspect -f '{{.State.ExitCode}}' "$NAME")
echo "exit code $code after $(( $(date +%s) - start )) s"; [ "$code" = 0 ]

log "docker-compose.yml"
if ! command -v docker-compose >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null
fi
docker-compose -f docker-compose.yml config -q
docker-compose -f docker-compose.yml --profile load config -q
echo "compose config ok"

log "smoke test passed"
