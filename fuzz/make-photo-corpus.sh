#!/usr/bin/env bash
# Writes the photo fuzzer's seed corpus (fuzz/photo-corpus): small JPEG and PNG files carrying
# every kind of metadata an upload may (EXIF with GPS and orientation, XMP, IPTC, comments, ICC
# profiles, PNG tEXt/iTXt/eXIf chunks), progressive, greyscale, palette and alpha variants.
# Needs vips and exiftool (scripts/bootstrap installs both).
set -euo pipefail
cd "$(dirname "$0")"
out=photo-corpus
rm -rf "$out" && mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

vips xyz "$work/xyz.v" 40 24
vips cast "$work/xyz.v" "$work/ramp.v" uchar
vips bandjoin "$work/ramp.v $work/ramp.v $work/ramp.v" "$work/rgb.v"
vips copy "$work/rgb.v" "$work/rgb.png"
tag=(-q -overwrite_original -GPSLatitude=25.0330 -GPSLatitudeRef=N -GPSLongitude=121.5654 -GPSLongitudeRef=E
  -Artist=fuzz -XMP:Creator=fuzz)

vips jpegsave "$work/rgb.png" "$out/exif.jpg" --Q 70
exiftool "${tag[@]}" -Orientation#=6 -Comment=fuzz -IPTC:Keywords=fuzz "$out/exif.jpg"
vips jpegsave "$work/rgb.png" "$out/progressive.jpg" --Q 60 --interlace
vips icc_transform "$work/rgb.png" "$work/p3.v" p3 --input-profile srgb
vips jpegsave "$work/p3.v" "$out/p3.jpg" --Q 60
vips colourspace "$work/rgb.png" "$out/grey.jpg[Q=60]" b-w

cp "$work/rgb.png" "$out/text.png"
exiftool "${tag[@]}" -PNG:Comment=fuzz -PNG:Author=fuzz "$out/text.png"
vips pngsave "$work/p3.v" "$out/p3.png"
vips pngsave "$work/rgb.png" "$out/palette.png" --palette
vips bandjoin_const "$work/rgb.png" "$out/alpha.png" 128
vips pngsave "$work/rgb.png" "$out/interlaced.png" --interlace
ls -l "$out"
