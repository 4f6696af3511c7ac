//! `hipsec bench`: benchmarks measured beside a reference in the same run.

use clap::Subcommand;
use hipsec::{bench_esp, bench_filter, bench_tunnel};

#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
    /// Single-core ESP seal/open throughput beside the raw cipher, as a ratio.
    #[command(long_about = "\
Single-core ESP seal/open throughput beside the raw AEAD/cipher on the same bytes, measured in
the same run and printed as a ratio.

Example:
  hipsec bench esp --suite aes128gcm --size 1420")]
    Esp(bench_esp::BenchEspArgs),
    #[command(long_about = "\
Packet-filter cost per packet for 10 to 100000 rules (none matching the traffic): the compiled
classifier without and with its flow cache, beside the linear reference evaluator (the kind of
filter seed 002 measured losing 38% of throughput at 5000 rules), all in one run. The target is
a classifier whose 100000-rule figure is at most 1.5x its 10-rule figure.

Example:
  hipsec bench filter --rules 10,100,1000,5000,100000 --seconds 2")]
    Filter(bench_filter::BenchFilterArgs),
    /// Kernel TCP through a hipsec tunnel between two namespaces beside the plain veth.
    #[command(long_about = "\
Kernel TCP (iperf3) through a hipsec ESP-in-UDP tunnel between two network namespaces, and over
the plain veth between them in the same run: throughput, mean ping RTT, CPU seconds of each
hipsec node process and the service demand (hipsec CPU us per KB transferred), with the ratios
tunnel/plain. Three rounds by default (plain then tunnel each, about 75 s in all); the figures
shown are those of the round with the median tunnel throughput, and every round is listed.
Needs root and iperf3; removes the namespaces it made on exit and on Ctrl-C.

Examples:
  hipsec bench tunnel
  hipsec bench tunnel --suite chacha20poly1305 --rounds 5 --json
  hipsec bench tunnel --queues 2 --parallel 2      # two lanes, two TCP streams")]
    Tunnel(bench_tunnel::BenchTunnelArgs),
    /// Make-before-break rekeying under TCP and UDP load, beside the same traffic without.
    #[command(long_about = "\
Two hipsec nodes in network namespaces; kernel TCP (iperf3) through the tunnel while the SA pair
is replaced every --interval-ms through the control socket (fresh SPIs and keys; new inbound
SAs live first, outbound switched, old inbound retired after --grace-ms), beside the same
transfer without rekeys in the same run (--rounds pairs, the order alternating); then a
fixed-rate UDP stream whose sequence numbers show whether a single datagram was lost, without
rekeys (the reference) and with. Reports rekeys done and how long each took, drops for lack of
an SA or policy, replay and integrity drops (both nodes, per phase), TCP retransmissions, the
throughput ratio, and for each UDP phase sent, received, lost and where the lost ones were lost:
sender, sending kernel, node, receiving kernel, receiver socket (SO_RXQ_OVFL) or unexplained,
from the hop counts of both nodes and the kernels' drop counters.
Exits non-zero only if the nodes dropped or lost packets while rekeying; loss outside the nodes
(kernels, sockets) is reported beside the reference phase, not charged to the rekeys.
Needs root and iperf3; about 2.5 minutes with the defaults.

Example:
  hipsec bench rekey
  hipsec bench rekey --seconds 10 --interval-ms 50 --json")]
    Rekey(hipsec::bench_rekey::BenchRekeyArgs),
    /// Per-packet cost, install rate and memory with 1 to 10,000 SAs to distinct peers.
    #[command(long_about = "\
How the node scales with SAs: seal (SPD lookup + ESP) and open (SAD lookup, replay check, ESP,
inbound SPD) per packet with N SAs to N/2 peers, one host policy per peer, every peer once per
round in a scattered order (--order), beside one SA pair in the same run (ratios: medians of
rounds that alternate with the one pair's, so both meet the same moments of a busy machine);
beside them the AEAD alone with one key per peer in the same order (raw) and what the stack adds to it (stack);
SAs per second through the in-process control interface (keyed, sent to a lane, filed,
acknowledged) and resident memory per SA. In-process, no root needed. With thousands of SAs the
per-SA state no longer fits the CPU's caches; --burst shows how much of that a flow's packets in
a row win back.

Examples:
  hipsec bench sas
  hipsec bench sas --burst 4 --order sequential
  hipsec bench sas --sas 1,1000,100000 --size 1420 --json")]
    Sas(hipsec::bench_sas::BenchSasArgs),
    /// Complete IKEv2 setups per second against a responder node, beside the crypto alone.
    #[command(long_about = "\
A responder node (hipsec run, PSK, remote_addrs = %any) in one network namespace and a built-in
load generator in another: --concurrency sans-IO initiators each run IKE_SA_INIT and IKE_AUTH
(the CHILD SA is installed in the node's data path before its answer leaves), then DELETE their
IKE SA (unless --no-delete) and start again. Reported: complete setups per second (median of
--rounds rounds of --seconds), the CPU of the responder (by thread) and of the generator, and
beside them, measured in the same run on one core, the rate the same setups' DH, PRF and AUTH
operations allow alone (both ends' work per setup); the ratio is measured / (that rate x cores).

With --clients N, a road-warrior concentrator instead: N distinct clients, each with its own
ECDSA certificate from a CA the run makes (strongSwan's pki), connect once each to one %any
connection asking for a virtual IP from its pool, and stay up; beside them, the same N setups
with a pre-shared key and no virtual IP (the reference). Reported per phase: setups/s, the
responder's CPU per setup, its memory per client held, and its IKE SAs and distinct leases.
Needs root; removes its namespaces on exit and on Ctrl-C.

Example:
  hipsec bench ike
  hipsec bench ike --seconds 10 --concurrency 32 --group ecp256 --json
  hipsec bench ike --rate 2000        # a fixed handshake rate below saturation
  hipsec bench ike --clients 1000     # 1,000 road warriors with certificates and leases")]
    Ike(hipsec::bench_ike::BenchIkeArgs),
    /// The HIP base exchange in process: phase costs per puzzle K and the I1 flood rate.
    #[command(long_about = "\
The HIP base exchange (RFC 7401) between two in-process hosts, no network: the Responder's
I1 -> R1 (T1 of seed 001), the Initiator's R1 -> I2 (T2: signature check, puzzle, Diffie-Hellman,
signing), the Responder's I2 -> R2 (T3) and the Initiator's R2 (T4), medians per puzzle K; then
the Responder answering I1s from distinct spoofed HITs as fast as one core can, beside the floor
measured in the same run (the HMAC that binds #I and the checksum alone), with the resident
memory before and after (a stateless Responder keeps nothing per I1).

Example:
  hipsec bench hip
  hipsec bench hip --k 0,10,20 --rounds 20 --curve p384 --json")]
    Hip(hipsec::bench_hip::BenchHipArgs),
}

/// Runs a `hipsec bench` subcommand.
pub(crate) fn run(c: BenchCommand) -> Result<(), String> {
    match c {
        BenchCommand::Esp(a) => bench_esp::run(&a),
        BenchCommand::Filter(a) => bench_filter::run(&a),
        BenchCommand::Tunnel(a) => bench_tunnel::run(&a),
        BenchCommand::Rekey(a) => hipsec::bench_rekey::run(&a),
        BenchCommand::Sas(a) => hipsec::bench_sas::run(&a),
        BenchCommand::Ike(a) => hipsec::bench_ike::run(&a),
        BenchCommand::Hip(a) => hipsec::bench_hip::run(&a),
    }
}
