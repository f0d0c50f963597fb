#!/usr/bin/env bash
# Refuses a tree that tracks build outputs: executables (ELF, Mach-O, PE),
# test binaries, profiles, or any file over 1 MB but pictures. Run by
# `make tree` (in `make vet` and `make test`), so CI and every `make test`
# before a commit catch what a careless `git add -A` let in.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=()
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  case "$f" in *.png|*.jpg|*.svg) continue ;; esac
  size=$(stat -c %s "$f")
  magic=$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')
  case "$magic" in
    7f454c46) bad+=("$f: an ELF executable (a build output)"); continue ;;
    cffaedfe|cefaedfe|feedface|feedfacf) bad+=("$f: a Mach-O executable"); continue ;;
    4d5a*) bad+=("$f: a Windows executable"); continue ;;
  esac
  case "$f" in *.test|*.out|*.prof) bad+=("$f: a test binary or profile"); continue ;; esac
  [ "$size" -gt 1000000 ] && bad+=("$f: $size bytes (generated? keep large data out of git)")
done < <(git ls-files -z)
if [ ${#bad[@]} -gt 0 ]; then
  echo "check-tree: git tracks files that should not be committed; 'git rm --cached' them and add them to .gitignore:" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
