//! The command line of `hipsec bench sas`.

/// Arguments of `hipsec bench sas`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchSasArgs {
    /// SA counts to measure (each is N/2 peers with a pair each; 1 means one outbound and one
    /// inbound SA).
    #[arg(long, value_delimiter = ',', default_value = "1,100,10000")]
    pub sas: Vec<usize>,
    /// Inner IP packet size in bytes (small packets show the per-packet work; large ones the
    /// cipher).
    #[arg(long, default_value_t = 128)]
    pub size: usize,
    /// Packets in a row to one peer before the next (1: strict round-robin, every packet to
    /// another SA; TCP flows arrive in bursts, which keep an SA's state in cache).
    #[arg(long, default_value_t = 1)]
    pub burst: usize,
    /// The order peers are visited in each round: "scattered" (a fixed stride through them,
    /// as peers that send in no particular order are met) or "sequential" (the order their
    /// state was allocated in, which the hardware prefetcher streams in: a best case).
    #[arg(long, default_value = "scattered", value_parser = ["scattered", "sequential"])]
    pub order: String,
    /// How the SAs' SPIs are chosen: "run" (0x10000000, 0x10000001, …, as a manually keyed
    /// network numbers them) or "random" (drawn from the crypto library's generator, as
    /// hipsec's IKEv2 and HIP drivers draw their inbound SPIs). The SAD finds an SPI in the
    /// direct slot its low bits name; SPIs in a run each have their own, while random ones
    /// share a slot now and then, and those SAs are found through the hashed index behind it,
    /// a cache line more.
    #[arg(long, default_value = "run", value_parser = ["run", "random"])]
    pub spis: String,
    /// Seconds of measurement per count, and again for the raw AEAD (in rounds that alternate
    /// with the 1-SA reference's; medians are reported).
    #[arg(long, default_value_t = 1.0)]
    pub seconds: f64,
    /// The ESP AEAD every SA uses (and the raw reference). Its key state is part of what a
    /// packet meets cold: AES-GCM's round keys and GHASH table lie in AWS-LC's 584-byte
    /// context, ten cache lines that sealing and opening all read, ChaCha20-Poly1305's
    /// 32-byte key in one or two, so comparing the two separates the key's share of the
    /// growth from the stack's own.
    #[arg(long, default_value = "aes128gcm", value_parser = ["aes128gcm", "aes256gcm", "chacha20poly1305"])]
    pub suite: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// The AEAD of `--suite`, read by the SA file's own suite parser.
pub(super) fn suite_alg(suite: &str) -> Result<crypto::AeadAlg, String> {
    match suite.parse::<crypto::EspSuite>().map_err(|e| format!("--suite {suite}: {e}"))?.encr {
        crypto::EncrAlg::Aead(alg) => Ok(alg),
        _ => Err(format!("--suite {suite}: not an AEAD")),
    }
}
