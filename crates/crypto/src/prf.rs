//! IKEv2 pseudorandom functions PRF_HMAC_SHA2_256/384/512 (RFC 4868 §2.2: HMAC with any key
//! length, full-length output), from aws-lc-rs. prf+ (RFC 7296 §2.13) is built on this in the
//! `ike` crate. Unlike `Provider::hmac`, the key may have any length: IKE keys the PRF with
//! `Ni | Nr` (§2.14).

use aws_lc_rs::hmac;
use zeroize::Zeroizing;

/// An IKEv2 PRF transform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PrfAlg {
    /// PRF_HMAC_SHA2_256 (IKE transform ID 5).
    HmacSha256,
    /// PRF_HMAC_SHA2_384 (IKE transform ID 6).
    HmacSha384,
    /// PRF_HMAC_SHA2_512 (IKE transform ID 7).
    HmacSha512,
}

impl PrfAlg {
    /// Every PRF, in our order of preference.
    pub const ALL: [PrfAlg; 3] = [PrfAlg::HmacSha256, PrfAlg::HmacSha384, PrfAlg::HmacSha512];

    /// The IKEv2 transform ID.
    pub fn ike_id(self) -> u16 {
        match self {
            PrfAlg::HmacSha256 => 5,
            PrfAlg::HmacSha384 => 6,
            PrfAlg::HmacSha512 => 7,
        }
    }

    /// The PRF with this IKEv2 transform ID, if implemented.
    pub fn from_ike_id(id: u16) -> Option<PrfAlg> {
        PrfAlg::ALL.into_iter().find(|p| p.ike_id() == id)
    }

    /// Output length, which is also the preferred key length (RFC 7296 §2.13, RFC 4868 §2.2).
    pub fn output_len(self) -> usize {
        match self {
            PrfAlg::HmacSha256 => 32,
            PrfAlg::HmacSha384 => 48,
            PrfAlg::HmacSha512 => 64,
        }
    }

    fn algorithm(self) -> hmac::Algorithm {
        match self {
            PrfAlg::HmacSha256 => hmac::HMAC_SHA256,
            PrfAlg::HmacSha384 => hmac::HMAC_SHA384,
            PrfAlg::HmacSha512 => hmac::HMAC_SHA512,
        }
    }
}

/// A keyed PRF.
pub struct Prf {
    alg: PrfAlg,
    key: hmac::Key,
}

impl std::fmt::Debug for Prf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prf").field("alg", &self.alg).finish_non_exhaustive()
    }
}

impl Prf {
    /// Keys the PRF; any key length is allowed (HMAC hashes long keys, pads short ones).
    pub fn new(alg: PrfAlg, key: &[u8]) -> Prf {
        Prf { alg, key: hmac::Key::new(alg.algorithm(), key) }
    }

    /// The algorithm.
    pub fn alg(&self) -> PrfAlg {
        self.alg
    }

    /// `prf(key, parts[0] | parts[1] | ...)`, `output_len()` bytes, zeroized on drop.
    pub fn compute(&self, parts: &[&[u8]]) -> Zeroizing<Vec<u8>> {
        let mut ctx = hmac::Context::with_key(&self.key);
        for p in parts {
            ctx.update(p);
        }
        Zeroizing::new(ctx.sign().as_ref().to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4868 §2.7.1, test cases PRF-1 to PRF-6 (keys shorter and longer than the block).
    const CASES: [(&str, &str, [&str; 3]); 6] = [
        (
            "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b",
            "4869205468657265",
            [
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
                "afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59cfaea9ea9076ede7f4af152e8b2fa9cb6",
                "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cdedaa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854",
            ],
        ),
        (
            "4a656665",
            "7768617420646f2079612077616e7420666f72206e6f7468696e673f",
            [
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
                "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e8e2240ca5e69e2c78b3239ecfab21649",
                "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737",
            ],
        ),
        (
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd",
            [
                "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
                "88062608d3e6ad8a0aa2ace014c8a86f0aa635d947ac9febe83ef4e55966144b2a5ab39dc13814b94e3ab6e101a34f27",
                "fa73b0089d56a284efb0f0756c890be9b1b5dbdd8ee81a3655f83e33b2279d39bf3e848279a722c806b485a47e67c807b946a337bee8942674278859e13292fb",
            ],
        ),
        (
            "0102030405060708090a0b0c0d0e0f10111213141516171819",
            "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd",
            [
                "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
                "3e8a69b7783c25851933ab6290af6ca77a9981480850009cc5577c6e1f573b4e6801dd23c4a7d679ccf8a386c674cffb",
                "b0ba465637458c6990e5a8c5f61d4af7e576d97ff94b872de76f8050361ee3dba91ca5c11aa25eb4d679275cc5788063a5f19741120c4f2de2adebeb10a298dd",
            ],
        ),
        (
            "",
            "54657374205573696e67204c6172676572205468616e20426c6f636b2d53697a65204b6579202d2048617368204b6579204669727374",
            [
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
                "4ece084485813e9088d2c63a041bc5b44f9ef1012a2b588f3cd11f05033ac4c60c2ef6ab4030fe8296248df163f44952",
                "80b24263c7c1a3ebb71493c1dd7be8b49b46d1f41b4aeec1121b013783f8f3526b56d037e05f2598bd0fd2215d6a1e5295e64f73f63f0aec8b915a985d786598",
            ],
        ),
        (
            "",
            "5468697320697320612074657374207573696e672061206c6172676572207468616e20626c6f636b2d73697a65206b657920616e642061206c6172676572207468616e20626c6f636b2d73697a6520646174612e20546865206b6579206e6565647320746f20626520686173686564206265666f7265206265696e6720757365642062792074686520484d414320616c676f726974686d2e",
            [
                "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
                "6617178e941f020d351e2f254e8fd32c602420feb0b8fb9adccebb82461e99c5a678cc31e799176d3860e6110c46523e",
                "e37b6a775dc87dbaa4dfa9f96e5e3ffddebd71f8867289865df5a32d20cdc944b6022cac3c4982b10d5eeb55c3e4de15134676fb6de0446065c97440fa8c6a58",
            ],
        ),
    ];

    #[test]
    fn rfc4868_section_2_7_1_prf_vectors() {
        for (n, (key, data, outs)) in CASES.iter().enumerate() {
            // PRF-5 and PRF-6 use a 131-byte key of 0xaa.
            let key = if key.is_empty() { vec![0xaa; 131] } else { hex::decode(key).unwrap() };
            let data = hex::decode(data).unwrap();
            for (alg, want) in PrfAlg::ALL.iter().zip(outs) {
                let prf = Prf::new(*alg, &key);
                let (a, b) = data.split_at(data.len() / 3);
                assert_eq!(hex::encode(&*prf.compute(&[a, b])), *want, "PRF-{} {alg:?}", n + 1);
                assert_eq!(prf.compute(&[]).len(), alg.output_len());
            }
        }
        for alg in PrfAlg::ALL {
            assert_eq!(PrfAlg::from_ike_id(alg.ike_id()), Some(alg));
        }
    }
}
