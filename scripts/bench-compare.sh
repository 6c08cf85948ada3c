#!/usr/bin/env bash
# What a change costs: builds two commits (each in its own worktree under target/bench-compare,
# with its own target directory, kept for the next comparison) and runs the gate's benches of both
# alternately, BASE then HEAD, ROUNDS times (default 3), then prints every figure as HEAD/BASE with
# the spread of the rounds (scripts/bench_compare.py). A script for people, not a timed test:
# performance is never asserted.
#
#   bash scripts/bench-compare.sh BASE [HEAD]          # HEAD: the checked-out commit
#   ROUNDS=5 BENCHES=component,node bash scripts/bench-compare.sh main~3
#
# BENCHES (comma-separated; default all): component (`cargo bench -p quota-host --bench component`:
# the Rust host's in-memory calls, the budget gate, the durable cycles against the disk's bound, the
# refresh), http (`cargo bench -p quota-hub --bench http`, shortened: BENCH_READS 20000, BENCH_PAIRS
# 1000, BENCH_SLOW_PAIRS 200 unless set), python
# (`python/bench/bench_gate.py`: the gate through the Python host beside the Rust host's) and node
# (`js/bench/gate.mjs`: the same through the Node host). The machine should be otherwise quiet; the
# alternation spreads what it is not over both sides. docs/status.md keeps the latest output.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: bash scripts/bench-compare.sh BASE [HEAD]" >&2; exit 2; }
base=$(git rev-parse --verify "$1^{commit}") || { echo "BASE: $1 is not a commit" >&2; exit 2; }
head=$(git rev-parse --verify "${2:-HEAD}^{commit}") || { echo "HEAD: ${2:-HEAD} is not a commit" >&2; exit 2; }
rounds=${ROUNDS:-3}  # at least 2 for a spread: one round's ratio cannot tell a change from noise
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS: a whole number of rounds, at least 1 (got $rounds)" >&2; exit 2; }
benches=${BENCHES:-component,http,python,node}
for b in ${benches//,/ }; do
  case "$b" in component|http|python|node) ;; *) echo "BENCHES: $b is none of component, http, python, node" >&2; exit 2;; esac
done
root=$PWD/target/bench-compare
out=$root/out
rm -rf "$out"
mkdir -p "$out"
echo "BASE $(git log -1 --format='%h %s' "$base")"
echo "HEAD $(git log -1 --format='%h %s' "$head")"

has() { [[ ",$benches," == *",$1,"* ]]; }

# One worktree per commit (reused: its target directory keeps the builds).
tree() { # side commit
  local dir=$root/$1
  if [ -d "$dir" ]; then
    git -C "$dir" checkout -q --detach "$2"
  else
    git worktree add -q --detach "$dir" "$2"
    # Seeded with this checkout's release and wasm builds: the dependencies are not built again
    # (only the workspace's own crates, whose sources differ).
    mkdir -p "$dir/target"
    for d in release wasm32-unknown-unknown; do
      [ -d "target/$d" ] && cp -a --reflink=auto "target/$d" "$dir/target/" || true
    done
  fi
  echo "$dir"
}

build() { # side commit
  local dir
  dir=$(tree "$1" "$2")
  echo "== building $1 ($(git -C "$dir" log -1 --format=%h)) in $dir (progress: $root/build-$1.log)"
  (
    cd "$dir"
    bash scripts/build-wasm.sh --fault  # the component bench's events section uses the fault build
    if has component; then cargo bench -q -p quota-host --bench component --no-run; fi
    if has http; then cargo bench -q -p quota-hub --bench http --no-run; fi
    if has node || has python; then bash scripts/build-js.sh; fi
    if has python; then bash scripts/python-env.sh; fi
    # The Python and Node benches run the component bench for the Rust host's figures beside theirs.
    if (has python || has node) && ! has component; then cargo bench -q -p quota-host --bench component --no-run; fi
  ) > "$root/build-$1.log" 2>&1 || { echo "the $1 build failed: the end of $root/build-$1.log:" >&2; tail -20 "$root/build-$1.log" >&2; exit 1; }
}

run() { # side round bench
  local dir=$root/$1 log
  mkdir -p "$out/$3"
  log=$out/$3/$1-$2.txt
  printf '   %-9s %s round %s ... ' "$3" "$1" "$2"
  local t0=$SECONDS
  (
    cd "$dir"
    case "$3" in
      component) cargo bench -q -p quota-host --bench component ;;
      http) BENCH_READS=${BENCH_READS:-20000} BENCH_PAIRS=${BENCH_PAIRS:-1000} BENCH_SLOW_PAIRS=${BENCH_SLOW_PAIRS:-200} \
              cargo bench -q -p quota-hub --bench http ;;
      python) target/pyenv/bin/python python/bench/bench_gate.py ;;
      node) cd js && node bench/gate.mjs ;;
    esac
  ) > "$log" 2>&1 || { echo "failed: the end of $log:" >&2; tail -20 "$log" >&2; exit 1; }
  echo "$(( SECONDS - t0 )) s"
}

build base "$base"
build head "$head"
for r in $(seq 1 "$rounds"); do
  echo "== round $r of $rounds"
  for b in ${benches//,/ }; do
    run base "$r" "$b"
    run head "$r" "$b"
  done
done
python3 scripts/bench_compare.py "$out"
