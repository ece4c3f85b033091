#!/usr/bin/env bash
# sandbox-netns.sh — a network namespace whose only way out is Sluice.
#
#   sandbox-netns.sh up   NAME CIDR     e.g. up goose-gh 10.200.1.0/30
#   sandbox-netns.sh down NAME
#   sandbox-netns.sh exec NAME CMD...   (same as: ip netns exec NAME CMD...)
#
# `up` creates namespace NAME and a veth pair: the host end (sh-NAME) gets the first address of CIDR,
# the namespace end (sn-NAME) the second; the namespace's default route points at the host end, and
# its resolv.conf (/etc/netns/NAME/resolv.conf, which `ip netns exec` mounts) names the host end.
# On the host, for packets that ENTER from sh-NAME only (PREROUTING / INPUT / FORWARD on that
# interface, so Sluice's own upstream connections are never touched):
#   - DNS (UDP and TCP 53)  -> DNAT to Sluice's DNS responder ($SLUICE_ADDRESS:$SLUICE_DNS_PORT)
#   - every other TCP connection -> DNAT to Sluice's transparent listener ($SLUICE_ADDRESS:$SLUICE_TRANSPARENT_PORT)
#   - everything else       -> DROP (other UDP, ICMP, other protocols; nothing is forwarded)
# IPv6 is disabled on both ends of the pair. DNAT works like REDIRECT (Sluice reads the original
# destination with SO_ORIGINAL_DST either way) but to one fixed address, so that several sandboxes
# can share one Sluice: give them all the same SLUICE_ADDRESS (a local address, e.g. the first
# sandbox's host end), which is also what Sluice's DNS answers with (listen.transparent).
#
# Environment: SLUICE_ADDRESS (default: the host end's address), SLUICE_TRANSPARENT_PORT (default
# 15001), SLUICE_DNS_PORT (default 15053).
# Needs root (CAP_NET_ADMIN), iproute2 and iptables. Idempotent `down`: it removes whatever exists.
set -euo pipefail

TPORT="${SLUICE_TRANSPARENT_PORT:-15001}"
DPORT="${SLUICE_DNS_PORT:-15053}"

die() { echo "sandbox-netns: $*" >&2; exit 2; }

check_name() {
  [[ "$1" =~ ^[a-z0-9][a-z0-9-]{0,11}$ ]] || die "NAME: '$1' (expected: 1-12 of a-z 0-9 -, so interface names fit in 15 characters)"
}

# ipv4 <-> integer
ip2int() { local IFS=.; read -r a b c d <<<"$1"; echo $(( (a << 24) | (b << 16) | (c << 8) | d )); }
int2ip() { echo "$(( ($1 >> 24) & 255 )).$(( ($1 >> 16) & 255 )).$(( ($1 >> 8) & 255 )).$(( $1 & 255 ))"; }

up() {
  local name="$1" cidr="$2"
  check_name "$name"
  [[ "$cidr" =~ ^([0-9]{1,3}\.){3}[0-9]{1,3}/([0-9]{1,2})$ ]] || die "CIDR: '$cidr' (expected: a.b.c.d/len, e.g. 10.200.1.0/30)"
  local net="${cidr%/*}" len="${cidr#*/}"
  (( len >= 8 && len <= 30 )) || die "CIDR: '$cidr' (expected: a prefix length 8..30)"
  local base mask host_ip ns_ip
  mask=$(( (0xffffffff << (32 - len)) & 0xffffffff ))
  base=$(( $(ip2int "$net") & mask ))
  host_ip=$(int2ip $(( base + 1 )))
  ns_ip=$(int2ip $(( base + 2 )))
  local hif="sh-$name" nif="sn-$name" chain="SLUICE-$name"
  local sluice_ip="${SLUICE_ADDRESS:-$host_ip}"
  [[ "$sluice_ip" =~ ^([0-9]{1,3}\.){3}[0-9]{1,3}$ ]] || die "SLUICE_ADDRESS: '$sluice_ip' (expected: an IPv4 address of this host)"
  ip netns list | grep -qw -- "^$name" && die "namespace $name exists (run: $0 down $name)"

  ip netns add "$name"
  ip link add "$hif" type veth peer name "$nif"
  ip link set "$nif" netns "$name"
  sysctl -qw "net.ipv6.conf.$hif.disable_ipv6=1"
  ip addr add "$host_ip/$len" dev "$hif"
  ip link set "$hif" up
  ip netns exec "$name" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
  ip netns exec "$name" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
  ip netns exec "$name" ip link set lo up
  ip netns exec "$name" ip addr add "$ns_ip/$len" dev "$nif"
  ip netns exec "$name" ip link set "$nif" up
  ip netns exec "$name" ip route add default via "$host_ip"
  mkdir -p "/etc/netns/$name"
  echo "nameserver $host_ip" > "/etc/netns/$name/resolv.conf"

  # NAT: send what enters from the sandbox to Sluice; Sluice's own output never passes PREROUTING.
  iptables -w -t nat -N "$chain"
  iptables -w -t nat -A "$chain" -p udp --dport 53 -j DNAT --to-destination "$sluice_ip:$DPORT"
  iptables -w -t nat -A "$chain" -p tcp --dport 53 -j DNAT --to-destination "$sluice_ip:$DPORT"
  iptables -w -t nat -A "$chain" -p tcp -j DNAT --to-destination "$sluice_ip:$TPORT"
  iptables -w -t nat -I PREROUTING -i "$hif" -j "$chain"
  # Filter: only the two redirected services may be reached; nothing is forwarded.
  iptables -w -N "$chain"
  iptables -w -A "$chain" -p tcp -d "$sluice_ip" --dport "$TPORT" -j ACCEPT
  iptables -w -A "$chain" -p udp -d "$sluice_ip" --dport "$DPORT" -j ACCEPT
  iptables -w -A "$chain" -p tcp -d "$sluice_ip" --dport "$DPORT" -j ACCEPT
  iptables -w -A "$chain" -j DROP
  iptables -w -I INPUT -i "$hif" -j "$chain"
  iptables -w -I FORWARD -i "$hif" -j DROP
  iptables -w -I FORWARD -o "$hif" -j DROP
  echo "sandbox $name: namespace $ns_ip, gateway $host_ip -> sluice $sluice_ip (tcp -> :$TPORT, dns udp+tcp -> :$DPORT)"
}

down() {
  local name="$1"
  check_name "$name"
  local hif="sh-$name" chain="SLUICE-$name"
  iptables -w -t nat -D PREROUTING -i "$hif" -j "$chain" 2>/dev/null || true
  iptables -w -t nat -F "$chain" 2>/dev/null || true
  iptables -w -t nat -X "$chain" 2>/dev/null || true
  iptables -w -D INPUT -i "$hif" -j "$chain" 2>/dev/null || true
  while iptables -w -D FORWARD -i "$hif" -j DROP 2>/dev/null; do :; done
  while iptables -w -D FORWARD -o "$hif" -j DROP 2>/dev/null; do :; done
  iptables -w -F "$chain" 2>/dev/null || true
  iptables -w -X "$chain" 2>/dev/null || true
  ip netns del "$name" 2>/dev/null || true
  ip link del "$hif" 2>/dev/null || true
  rm -rf "/etc/netns/$name"
}

case "${1:-}" in
  up) [ $# -eq 3 ] || die "usage: $0 up NAME CIDR"; up "$2" "$3" ;;
  down) [ $# -eq 2 ] || die "usage: $0 down NAME"; down "$2" ;;
  exec) [ $# -ge 3 ] || die "usage: $0 exec NAME CMD..."; name="$2"; shift 2; exec ip netns exec "$name" "$@" ;;
  *) die "usage: $0 up NAME CIDR | down NAME | exec NAME CMD..." ;;
esac
