#!/usr/bin/env bash
# The README's quick-start commands, exactly as printed: the lines of the first ```sh block under
# "## Quick start", comments cut off. `--print` lists them; `test` or `main` runs the one line that
# runs the test suite or the main job, the way a newcomer pastes it into a shell.
set -euo pipefail
readme="$(dirname "$0")/../README.md"
lines="$(awk '/^## Quick start/{in_section=1; next} /^## /{in_section=0} in_section && /^```sh/{in_block=1; next} in_block && /^```/{exit} in_block' "$readme" | sed -e 's/[[:space:]]*#.*$//' -e '/^[[:space:]]*$/d')"
case "${1:---print}" in
  --print) printf '%s\n' "$lines" ;;
  test) line="$(grep -E 'npm test$' <<<"$lines")" ;;
  main) line="$(grep -E 'npm run loadtest$' <<<"$lines")" ;;
  *) echo "usage: scripts/quick-start.sh [--print|test|main]" >&2; exit 2 ;;
esac
if [[ -n "${line:-}" ]]; then
  echo "+ $line" >&2
  bash -c "$line"
elif [[ "${1:---print}" != --print ]]; then
  echo "the README's quick start has no '$1' line" >&2
  exit 1
fi
