#!/usr/bin/env bash
# Builds the Ray node image (testbed/ray-node.Dockerfile) from this checkout's wheels and runs the
# oracle suite on a two-container Ray cluster made of it: a head without slots (the driver runs
# there, with this checkout mounted read-only for its tasks and manifests) and one worker with
# two `buzz_trial` slots. Passes when the dry run lists the worker and all 18 trials score 1.0 in
# bubblewrap sandboxes. Needs a Docker engine with the base images (testbed/build-base-images.sh)
# and the package registry. Usage: testbed/ray-node-check.sh   (from the repository root)
set -euo pipefail
image=buzz-orchestra-ray-node
network=buzz-ray-check
python=${PYTHON:-.venv/bin/python}
work=$(mktemp -d /var/tmp/buzz-ray-node.XXXXXX)
cleanup() {
    docker rm -f buzz-ray-check-head buzz-ray-check-worker >/dev/null 2>&1 || true
    docker network rm "$network" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
echo "wheels of buzz-orchestra[ray] ..."
"$python" -m pip wheel --quiet --wheel-dir "$work/wheelhouse" '.[ray]' 2>&1 | grep -v '^WARNING' || true
cp testbed/ray-node.Dockerfile "$work/Dockerfile"
echo "building $image ..."
docker build --quiet --tag "$image" "$work" >/dev/null 2>"$work/build.log" || { cat "$work/build.log"; exit 1; }
docker network create "$network" >/dev/null
# bubblewrap in a container: user namespaces (seccomp, AppArmor) and a fresh /proc (systempaths)
sandboxable=(--security-opt seccomp=unconfined --security-opt apparmor=unconfined
    --security-opt systempaths=unconfined)
docker run --detach --name buzz-ray-check-head --network "$network" --shm-size 1g \
    "${sandboxable[@]}" --volume "$PWD:/repo:ro" "$image" \
    ray start --head --port 6379 --num-cpus 0 --resources '{"buzz_trial": 0}' --block >/dev/null
docker run --detach --name buzz-ray-check-worker --network "$network" --shm-size 1g \
    "${sandboxable[@]}" "$image" \
    ray start --address buzz-ray-check-head:6379 --resources '{"buzz_trial": 2}' --block >/dev/null
driver() { docker exec --interactive --workdir /repo buzz-ray-check-head "$@"; }
for _ in $(seq 60); do
    driver orchestra benchmark --executor ray --dry-run --jobs-dir /tmp/jobs --state-dir /tmp/state \
        </dev/null >"$work/dry-run.txt" 2>&1 && grep -q "2 of 2 slot(s) free" "$work/dry-run.txt" && break
    sleep 1
done
grep "node " "$work/dry-run.txt" || { cat "$work/dry-run.txt"; exit 1; }
driver orchestra benchmark --executor ray -n 2 --jobs-dir /tmp/jobs --state-dir /tmp/state \
    </dev/null | grep -E "^trials:|^all "
driver python3 - <<'PY'
import collections, json, pathlib, sys
results = [json.loads(p.read_text()) for p in pathlib.Path("/tmp/jobs").glob("*/*/*/result.json")]
seen = collections.Counter((r["status"], r["reward"], r["sandbox"]) for r in results)
print(f"node image check: {dict(seen)}")
sys.exit(0 if seen == {("scored", 1.0, "bwrap"): 18} else 1)
PY
