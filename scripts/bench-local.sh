#!/usr/bin/env bash
# The built-in engine against llama-server on the same GGUF file, prompt and thread count:
# decode and prefill tokens/s, round-2 first-token latency (prefix kept vs. recomputed), peak
# memory, launch to first token of `seek -p`, and (with --build-cost) what the engine adds to
# the release build's time and the binary's size. Prints a table.
#
# Usage: scripts/bench-local.sh [--build-cost] [--runs N] [--threads N] [--gguf FILE]
#   --build-cost  also builds the commit before the engine (4788198^) in a worktree with a
#                 copy of target/release and compares `cargo build --release` time and binary size
#                 (several minutes).
# llama-server: http://127.0.0.1:$LLAMA_PORT (default 18080), started with
# /work/shared/tools/local-model.sh when it does not answer. The best of N runs is kept on
# each side (the machine is shared; say the load average with the numbers).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
gguf="${HOME}/.cache/seek-dev/SmolLM2-135M-Instruct.Q4_1.gguf"
threads=2
runs=3
build_cost=0
port="${LLAMA_PORT:-18080}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-cost) build_cost=1 ;;
    --runs) runs="$2"; shift ;;
    --threads) threads="$2"; shift ;;
    --gguf) gguf="$2"; shift ;;
    *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
  shift
done
[[ -f "$gguf" ]] || { echo "no model file $gguf (use --gguf)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# llama-server: must serve this same file with the same thread count.
if ! curl -sf "http://127.0.0.1:$port/health" >/dev/null; then
  echo "starting llama-server on $port" >&2
  bash /work/shared/tools/local-model.sh "$port" >&2
fi

cd "$repo"
# The release binary and the benchmark, current.
cargo build --release --quiet
cargo bench --bench local_engine --no-run --quiet 2>"$work/bench-build.log" || {
  cat "$work/bench-build.log" >&2; exit 1; }
bench_bin=$(ls -t target/release/deps/local_engine-* | grep -v '\.d$' | head -1)

echo "seek engine ($runs runs)…" >&2
SEEK_BENCH_GGUF="$gguf" SEEK_BENCH_THREADS="$threads" SEEK_BENCH_RUNS="$runs" \
  "$bench_bin" >"$work/seek.txt"
SEEK_BENCH_PRINT_PROMPT=1 "$bench_bin" >"$work/long_prompt.txt"

echo "llama-server ($runs runs)…" >&2
python3 - "$port" "$runs" "$work/long_prompt.txt" >"$work/llama.txt" <<'EOF'
import json, sys, time, urllib.request
port, runs, prompt_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
long_prompt = open(prompt_file).read()
url = f"http://127.0.0.1:{port}/v1/chat/completions"

def chat(messages, max_tokens, cache):
    body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0, "seed": 1,
            "cache_prompt": cache}
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    started = time.monotonic()
    with urllib.request.urlopen(req) as r:
        reply = json.load(r)
    return reply, time.monotonic() - started

user = lambda text: {"role": "user", "content": text}
decode = prefill = short_prefill = 0.0
for _ in range(runs):
    r, _ = chat([user("Write a Python function that adds two numbers.")], 64, False)
    t = r["timings"]
    decode = max(decode, t["predicted_per_second"])
    short_prefill = max(short_prefill, t["prompt_per_second"])
    r, _ = chat([user(long_prompt)], 1, False)
    prefill = max(prefill, r["timings"]["prompt_per_second"])
    prefill_tokens = r["timings"]["prompt_n"]
print("decode_tok_s", round(decode, 1))
print("short_prefill_tok_s", round(short_prefill, 1))
print("prefill_tokens", prefill_tokens)
print("prefill_tok_s", round(prefill, 1))
first, _ = chat([user(long_prompt)], 32, True)
answer = first["choices"][0]["message"]["content"]
round_two = [user(long_prompt), {"role": "assistant", "content": answer}, user("Now in one sentence.")]
kept = recomputed = float("inf")
for _ in range(runs):
    chat([user(long_prompt)], 32, True)
    _, t = chat(round_two, 1, True)
    kept = min(kept, t)
    _, t = chat(round_two, 1, False)
    recomputed = min(recomputed, t)
print("round2_kept_ms", round(kept * 1e3, 1))
print("round2_recomputed_ms", round(recomputed * 1e3, 1))
EOF
pid=$(cat "${HOME}/.cache/seek-dev/llama-server.pid" 2>/dev/null || true)
if [[ -n "$pid" && -r "/proc/$pid/status" ]]; then
  echo "peak_rss_bytes $(( $(awk '/VmHWM/ {print $2}' "/proc/$pid/status") * 1024 ))" >>"$work/llama.txt"
  echo "threads $(tr '\0' ' ' <"/proc/$pid/cmdline" | sed -n 's/.* -t \([0-9]*\).*/\1/p')" >>"$work/llama.txt"
fi

# Launch to first token of `seek -p` on a cached model: process start to the first byte of
# the answer on stdout, best of N, with a config that only sets the thread count.
printf '[local]\nthreads = %s\n' "$threads" >"$work/config.toml"
# Its sessions go to the temporary directory, not the user's.
python3 - "$repo/target/release/seek" "$gguf" "$work/config.toml" "$runs" "$work/data" \
  >>"$work/seek.txt" <<'EOF'
import os, subprocess, sys, time
seek, gguf, config, runs, data = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
env = dict(os.environ, SEEK_CONFIG=config, SEEK_DATA_DIR=data, NO_COLOR="1")
best = float("inf")
for _ in range(runs):
    started = time.monotonic()
    p = subprocess.Popen([seek, "-p", "Say hello.", "--provider", "local", "--model", gguf],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    first = p.stdout.read(1)
    elapsed = time.monotonic() - started
    p.stdout.read()
    p.wait()
    if first:
        best = min(best, elapsed)
print("launch_to_first_token_ms", round(best * 1e3, 1) if best != float("inf") else "none")
EOF
echo "binary_bytes $(stat -c %s target/release/seek)" >>"$work/seek.txt"

if [[ $build_cost -eq 1 ]]; then
  before="$work/before"
  echo "building the commit before the engine (4788198^)…" >&2
  git worktree add --quiet --detach "$before" 4788198^
  # Only the release build cache (target/debug is many GB).
  mkdir -p "$before/target" && cp -a target/release "$before/target/"
  touch "$before/src/lib.rs" "$before/src/main.rs"
  start=$(date +%s%N)
  (cd "$before" && cargo build --release --quiet)
  echo "build_release_s $(( ($(date +%s%N) - start) / 1000000000 ))" >"$work/before.txt"
  echo "binary_bytes $(stat -c %s "$before/target/release/seek")" >>"$work/before.txt"
  git worktree remove --force "$before"
  # The same crate-only rebuild now, for a like-for-like time.
  touch src/lib.rs src/main.rs
  start=$(date +%s%N)
  cargo build --release --quiet
  echo "build_release_s $(( ($(date +%s%N) - start) / 1000000000 ))" >>"$work/seek.txt"
fi

echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - "$work" "$(stat -c %s "$gguf")" <<'EOF'
import os, sys
work, gguf_bytes = sys.argv[1], int(sys.argv[2])
def read(name):
    values = {}
    path = os.path.join(work, name)
    if os.path.exists(path):
        for line in open(path):
            key, _, value = line.strip().partition(" ")
            values[key] = value  # the last value of a key wins (the like-for-like rebuild)
    return values
seek, llama, before = read("seek.txt"), read("llama.txt"), read("before.txt")
def num(d, k):
    try:
        return float(d[k])
    except (KeyError, ValueError):
        return None
rows = [
    ("threads", "threads", "", None),
    ("decode tok/s (64 tokens)", "decode_tok_s", "higher", 0.7),
    ("prefill tok/s (38-token prompt)", "short_prefill_tok_s", "higher", None),
    ("prefill tok/s (long prompt)", "prefill_tok_s", "higher", 0.5),
    ("long prompt tokens", "prefill_tokens", "", None),
    ("round-2 first token, prefix kept (ms)", "round2_kept_ms", "lower", None),
    ("round-2 first token, recomputed (ms)", "round2_recomputed_ms", "lower", None),
    ("peak RSS (MB)", "peak_rss_bytes", "lower", None),
]
print(f"{'':40} {'seek':>12} {'llama.cpp':>12} {'seek/llama':>11}")
for label, key, _, goal in rows:
    s, l = num(seek, key), num(llama, key)
    if key == "peak_rss_bytes":
        s, l = (v / 1e6 if v else v for v in (s, l))
    ratio = f"{s / l:.2f}" if s and l else ""
    if goal and ratio:
        ratio += " ok" if s / l >= goal else f" <{goal}"
    fmt = lambda v: "" if v is None else (f"{v:.1f}" if v % 1 else f"{v:.0f}")
    print(f"{label:40} {fmt(s):>12} {fmt(l):>12} {ratio:>11}")
kept, recomputed = num(seek, "round2_kept_ms"), num(seek, "round2_recomputed_ms")
if kept and recomputed:
    print(f"seek round-2 kept/recomputed: {kept / recomputed:.1%} (goal ≤ 20 %)")
rss = num(seek, "peak_rss_bytes")
if rss:
    print(f"seek peak RSS / GGUF size: {rss / gguf_bytes:.2f}× (goal < 2×; GGUF {gguf_bytes / 1e6:.1f} MB); "
          f"peak during load {num(seek, 'load_peak_rss_bytes') / 1e6:.1f} MB, "
          f"RSS after load {num(seek, 'loaded_rss_bytes') / 1e6:.1f} MB, "
          f"after the long prompt {num(seek, 'generating_rss_bytes') / 1e6:.1f} MB")
print(f"seek model load: {seek.get('load_ms', '?')} ms; launch to first token of `seek -p`: "
      f"{seek.get('launch_to_first_token_ms', '?')} ms")
print(f"release binary: {int(num(seek, 'binary_bytes') or 0) / 1e6:.1f} MB", end="")
if before:
    print(f" (before the engine: {int(num(before, 'binary_bytes')) / 1e6:.1f} MB)", end="")
print()
if before:
    print(f"cargo build --release of the seek crate alone (deps built, lib.rs and main.rs touched): "
          f"{num(seek, 'build_release_s'):.0f} s (before the engine: {num(before, 'build_release_s'):.0f} s)")
print(f"seek's greedy answer: {seek.get('answer', '?')[:120]}")
EOF
