#!/usr/bin/env bash
# Sourced by the device scripts: a sweep's folder carried from one device call to the next. The device
# machine keeps ignored folders only while warm and empties $OUT before each command, so a sweep longer
# than one call restarted from nothing whenever the machine went back between calls. Each call now packs its
# folder into $OUT, and the next call starts from a carried copy where its own folder is missing.
# Here, after each call (N: the reply's files_at; NAME: the folder's name):
#   mkdir -p .resume && tar xzf /work/.device/N/NAME.tgz -C .resume     # then carry ".resume" in the next call
# `.resume/` is ignored by git.

restore_folder() {  # DIR: start from .resume/<basename DIR> where DIR is missing and a copy was carried
  local dir=$1 name
  name=$(basename "$dir")
  if [ ! -e "$dir" ] && [ -d ".resume/$name" ]; then
    mkdir -p "$(dirname "$dir")" && cp -r ".resume/$name" "$dir" && echo "resumed $name from the carried .resume/$name"
  fi
}

save_folder() {  # DIR [with-runs]: packed as $OUT/<basename DIR>.tgz, less compile caches and (a sweep's)
  local dir=$1 skip=()  # per-problem search folders: its results/ are what a resumed sweep reads
  [ "${2:-}" = with-runs ] || skip=(--exclude="$(basename "$dir")/runs")
  tar czf "${OUT:?OUT must name the folder that comes back}/$(basename "$dir").tgz" -C "$(dirname "$dir")" \
    --exclude=caches "${skip[@]}" "$(basename "$dir")"
}
