#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Makes the certificates of the TLS tests in directory $1, with the openssl command:
#   ca.crt/key          the test CA
#   other-ca.crt        a CA that signed nothing here (a client trusting only it refuses all)
#   server.crt/key      signed by ca, for localhost and 127.0.0.1
#   wronghost.crt/key   signed by ca, for other.example only
#   expired.crt/key     signed by ca, for localhost and 127.0.0.1, valid during 2020-01-01 only
#   client.crt/key      signed by ca, a client certificate for mutual TLS
# EC P-256 keys: fast to make. Everything is valid for 2 days (tests last seconds).
set -euo pipefail
cd "$1"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
key ca.key
openssl req -x509 -new -key ca.key -out ca.crt -days 2 -subj /CN=redlock-test-ca
key other-ca.key
openssl req -x509 -new -key other-ca.key -out other-ca.crt -days 2 -subj /CN=redlock-other-ca

# sign NAME SAN: NAME.key + a certificate for SAN, signed by the test CA.
sign() {
  key "$1.key"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$1"
  printf 'subjectAltName=%s\n' "$2" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
    -extfile "$1.ext" -out "$1.crt" 2>/dev/null
}
sign server "DNS:localhost,IP:127.0.0.1"
sign wronghost "DNS:other.example"
sign client "DNS:redlock-client"

# An expired certificate needs chosen dates, which only `openssl ca` sets.
mkdir -p ca-db
: >ca-db/index.txt
echo 1000 >ca-db/serial
cat >ca.cnf <<'CNF'
[ca]
default_ca = test
[test]
database = ca-db/index.txt
serial = ca-db/serial
new_certs_dir = ca-db
default_md = sha256
policy = any
copy_extensions = copy
unique_subject = no
[any]
commonName = supplied
CNF
key expired.key
openssl req -new -key expired.key -out expired.csr -subj /CN=expired \
  -addext "subjectAltName=DNS:localhost,IP:127.0.0.1"
openssl ca -batch -notext -config ca.cnf -cert ca.crt -keyfile ca.key -in expired.csr \
  -out expired.crt -startdate 20200101000000Z -enddate 20200102000000Z 2>/dev/null
