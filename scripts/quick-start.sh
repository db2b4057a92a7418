#!/usr/bin/env bash
# The README's quick-start commands, exactly as printed: the lines of the first ```sh block under
# "## Quick start", comments cut off. `--print` lists them; `--check LINE...` fails unless they are
# exactly these lines (any order), so that .ci/run can spell its commands out and still run what a
# newcomer pastes.
set -euo pipefail
readme="$(dirname "$0")/../README.md"
lines="$(awk '/^## Quick start/{in_section=1; next} /^## /{in_section=0} in_section && /^```sh/{in_block=1; next} in_block && /^```/{exit} in_block' "$readme" | sed -e 's/[[:space:]]*#.*$//' -e '/^[[:space:]]*$/d')"
case "${1:---print}" in
  --print) printf '%s\n' "$lines" ;;
  --check)
    shift
    expected="$(printf '%s\n' "$@" | sort)"
    if [[ "$(sort <<<"$lines")" != "$expected" ]]; then
      printf "the README's quick start reads:\n%s\nbut .ci/run runs:\n%s\n" "$lines" "$expected" >&2
      exit 1
    fi
    ;;
  *) echo "usage: scripts/quick-start.sh [--print | --check LINE...]" >&2; exit 2 ;;
esac
