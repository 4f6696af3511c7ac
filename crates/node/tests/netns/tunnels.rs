//! Round trips through every kind of tunnel: suites, carriers (UDP, raw IP), AH and AH+ESP,
//! IPv6 inside and outside, transport mode and BEET; each checks the capture for cleartext.

use super::*;

#[test]
fn aes_gcm_udp_ping_tcp_and_no_cleartext() {
    tunnel_round_trip(Suite::Gcm, false);
}

/// Two workers per node: one seals (owns the outbound SA), one opens (owns the inbound SA).
#[test]
fn aes_gcm_udp_two_workers() {
    tunnel_round_trip_tuned(Suite::Gcm, false, "two-workers");
}

/// The plain paths: one datagram per system call, no TUN offloads (phase 1's data path).
#[test]
fn aes_gcm_udp_without_batching_or_offloads() {
    tunnel_round_trip_tuned(Suite::Gcm, false, "no-mmsg,no-offload,no-buffers,no-realtime");
}

/// sendmmsg/recvmmsg without UDP GSO/GRO, with TUN offloads (super-packets split and coalesced).
#[test]
fn aes_gcm_udp_mmsg_without_gso_gro() {
    tunnel_round_trip_tuned(Suite::Gcm, false, "no-gso,no-gro");
}

#[test]
fn chacha20_poly1305_udp() {
    tunnel_round_trip(Suite::ChaCha, false);
}

#[test]
fn aes_cbc_hmac_sha256_udp() {
    tunnel_round_trip(Suite::CbcSha256, false);
}

/// Negative control: with ESP-NULL the marker must be found, so the check above can fail.
#[test]
fn esp_null_capture_shows_cleartext() {
    tunnel_round_trip(Suite::NullSha256, false);
}

#[test]
fn aes_gcm_raw_esp() {
    tunnel_round_trip(Suite::Gcm, true);
}

/// AH alone (RFC 4302, HMAC-SHA-256-128) over raw IP protocol 51: integrity without
/// confidentiality, so the capture must show the cleartext marker.
#[test]
fn ah_sha256_raw() {
    round_trip_opts(Opts { raw: true, prot: Prot::Ah, ..Opts::default() }, "");
}

/// AH+ESP: ESP (AES-GCM, tunnel) inside AH (transport) over raw IP, as one SA bundle.
#[test]
fn ah_plus_esp_raw() {
    round_trip_opts(Opts { raw: true, prot: Prot::AhEsp, ..Opts::default() }, "");
}

/// IPv6 outer header: ESP in UDP between 2001:db8::1 and 2001:db8::2 carrying IPv4.
#[test]
fn aes_gcm_udp_ipv6_outer() {
    round_trip_opts(Opts { outer_v6: true, ..Opts::default() }, "");
}

/// IPv6 inside the tunnel (ICMPv6 echo and kernel TCP over fd00::/64), IPv4 outside, ESP in UDP.
#[test]
fn aes_gcm_udp_inner_ipv6() {
    round_trip_opts(Opts { inner_v6: true, ..Opts::default() }, "");
}

/// IPv6 inside and outside: raw ESP (protocol 50) between 2001:db8::1 and ::2.
#[test]
fn aes_gcm_raw_esp_ipv6_inner_and_outer() {
    round_trip_opts(Opts { raw: true, outer_v6: true, inner_v6: true, ..Opts::default() }, "");
}

/// AH+ESP over raw IPv6: AH's ICV covers the IPv6 header the kernel builds for the raw socket.
#[test]
fn ah_plus_esp_raw_ipv6_outer() {
    round_trip_opts(Opts { raw: true, outer_v6: true, prot: Prot::AhEsp, ..Opts::default() }, "");
}

/// Host to host in transport mode (RFC 4303 §3.1.1): ESP between the TUN addresses, carried in
/// UDP between the veth addresses (the receiver rebuilds the IP header from its SA).
#[test]
fn aes_gcm_udp_transport_mode_host_to_host() {
    round_trip_opts(Opts { transport_mode: true, ..Opts::default() }, "");
}

/// BEET (RFC 7402 §5) in ESP in UDP over IPv4: HIT-like IPv6 inner addresses, IPv4 on the wire.
#[test]
fn beet_udp_ipv6_inner_ipv4_outer() {
    round_trip_opts(Opts { beet: true, ..Opts::default() }, "");
}

/// BEET over raw ESP (protocol 50) and IPv4: the kernel writes the carrier's header on the way
/// out; the receiver replaces it with the SA's inner addresses.
#[test]
fn beet_raw_esp_ipv4_outer() {
    round_trip_opts(Opts { beet: true, raw: true, ..Opts::default() }, "");
}

/// BEET over raw ESP and IPv6.
#[test]
fn beet_raw_esp_ipv6_outer() {
    round_trip_opts(Opts { beet: true, raw: true, outer_v6: true, ..Opts::default() }, "");
}
