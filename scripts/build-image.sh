#!/usr/bin/env bash
# Builds an OCI image of lookout without a container daemon or a base image, with umoci
# (Debian: apt-get install umoci): the binary, the shared libraries it loads (from this
# machine, found with ldd), the CA certificates, /etc/passwd with the non-root user 65532, and
# no shell. The result is an OCI layout directory; push it with skopeo:
#
#   scripts/build-image.sh --output target/image --tag 0.1.0
#   skopeo copy oci:target/image:0.1.0 docker://registry.example.com/lookout:0.1.0
#
# Options: --binary PATH (default: a fresh `cargo build --release`), --output DIR (default
# target/image, replaced), --tag TAG (default: the crate's version).
set -euo pipefail
cd "$(dirname "$0")/.."

binary=""
output="target/image"
tag="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)"
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary="$2"; shift 2 ;;
    --output) output="$2"; shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    *) echo "unknown option: $1 (see the head of $0)" >&2; exit 2 ;;
  esac
done

command -v umoci >/dev/null 2>&1 || { echo "umoci is needed: apt-get install umoci" >&2; exit 1; }
if [ -z "$binary" ]; then
  echo "== cargo build --release --bin lookout"
  cargo build --release --locked --bin lookout
  binary="target/release/lookout"
fi
[ -x "$binary" ] || { echo "not an executable: $binary" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"
mkdir -p "$rootfs"/{usr/local/bin,etc/ssl/certs,etc/lookout,var/lib/lookout,tmp}

install -m 0755 "$binary" "$rootfs/usr/local/bin/lookout"
# The dynamic loader and every library ldd resolves, at the same paths.
ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' |
  while read -r lib; do
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
  done
cp -L /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/nonexistent\nnonroot:x:65532:65532:nonroot:/var/lib/lookout:/nonexistent\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs/etc/group"
printf 'hosts: files dns\n' >"$rootfs/etc/nsswitch.conf"
printf '127.0.0.1 localhost\n::1 localhost\n' >"$rootfs/etc/hosts"
chmod 1777 "$rootfs/tmp"
chown 65532:65532 "$rootfs/var/lib/lookout"

rm -rf "$output"
umoci init --layout "$output"
umoci new --image "$output:$tag"
umoci insert --image "$output:$tag" "$rootfs" /
umoci config --image "$output:$tag" \
  --os linux --architecture amd64 \
  --config.user 65532:65532 \
  --config.workingdir /var/lib/lookout \
  --config.entrypoint /usr/local/bin/lookout \
  --config.cmd serve --config.cmd --config --config.cmd /etc/lookout/config.toml \
  --config.exposedports 8080/tcp \
  --config.volume /var/lib/lookout \
  --config.env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  --config.label org.opencontainers.image.title=lookout \
  --config.label "org.opencontainers.image.version=$tag"
umoci gc --layout "$output"
echo "image $output:$tag"
