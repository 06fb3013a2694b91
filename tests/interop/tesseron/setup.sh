#!/usr/bin/env bash
# Creates the Python venv the Tesseron interop tests run the PyPI `tesseron` package from.
# Idempotent: skips the install when the venv exists and was built from this exact requirements.txt.
# Usage: bash tests/interop/tesseron/setup.sh   (prints the venv's python path on its last line)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
venv="${TESSERON_VENV:-$root/target/tesseron-venv}"
req="$here/requirements.txt"
python="${PYTHON:-python3}"

stamp="$venv/.requirements.sha256"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  echo "tesseron venv up to date: $venv" >&2
else
  "$python" -c 'import sys; assert sys.version_info >= (3, 11), "tesseron needs Python >= 3.11"'
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$req"
  echo "$want" > "$stamp"
  echo "tesseron venv installed: $venv" >&2
fi
"$venv/bin/python" -c 'import tesseron, websockets; assert tesseron.PROTOCOL_VERSION == "1.2.0", tesseron.PROTOCOL_VERSION'
echo "$venv/bin/python"
