//! Known-answer tests of the key schedule.
//!
//! Source: NIST's ACVP server, the IKEv2 KDF component of SP 800-135 (the CAVP "IKEv2" KDF
//! test), as in usnistgov/ACVP-Server
//! `gen-val/src/crypto/test/NIST.CVP.ACVTS.Libraries.Crypto.IKEv2.Tests/IKEv2Tests.cs`
//! (commit b633d3fd5fabd375ef572f9b4feb38cd26932596), test case "IKEv2 SHA2-256": given Ni, Nr,
//! g^ir, g^ir (new), SPIi, SPIr it gives SKEYSEED, DKM = prf+(SKEYSEED, Ni|Nr|SPIi|SPIr),
//! child DKM = prf+(SK_d, Ni|Nr), child DKM with D-H = prf+(SK_d, g^ir(new)|Ni|Nr) and
//! SKEYSEED(rekey) = prf(SK_d, g^ir(new)|Ni|Nr), each DKM 3072 bits, SK_d its first 32 bytes.
//! (The SHA2-224 case of that file is skipped: PRF_HMAC_SHA2_224 is not an IKEv2 transform.)

use super::*;
use crate::suite::IkeSuite;
use crypto::{AeadAlg, CbcAlg, DhGroup, EncrAlg, HmacAlg, IntegAlg};

const NI: &str = "0a58fea9c1d4fee2e74e1aad6fb02dd5f318eb127465a112be8dc3c04d5dba62eae708f9dc1b2362afd6ba4bda3cf5000f4979fbcbadbcfda9291593829c4e905c21db0c2ee15175ce77a8a0dadf25c7f175bc53fd91b636a9b3c50b203de9b9d6dc463dcb4048f101e26498ceaed3afbcd931394a7e099392dfff82e5d6fa85c2e8a8ab90ad363a66795dc32798847e405acd87988140f973058917273a6b0bafb962c75e2b1a21e79c08beeb82168bf8b4b57f3dce867bf7862a7b8acbc21be838021913daf64340c055ed17aaf7b6e1d0ca33ae890ddbdb83f4e615aad5e3bff58c3db70bac81a0dfbabe5391fc62bca4659e22a0741e01d8d06e67d9bb41";
const NR: &str = "e4fdfa68df6171d9eaff8b7b5ad31e7c6098d259f3397c9854cbefe7449b0864c1df16ddece8b26567560f8d59182a44c19149c2d0d72606a160021ade3d23c7c6936c91a4b6bec37adf38cfc84b851c68dcee06f81306f63abbefc07e231e3058c49437a557df617eac01663593d2a3e594699284c0a35eae6931492ccb2a43db72a600a3899205d681d2b76b1280e456339bb10e0c584aecfdae31c77a4c40dbcb345f782ac32835d4c220c1e97254ded6a40075dd717b00b69c86a49e801773026536ae02d58a649827f1ba67610ee936dffd11c9d5a9156631916a0a0046ec0ba42f56f2a18de83d5d71a985b0cc9eec2c06b3d907ca58454419f374069d";
const GIR: &str = "9d469de41b4739c7dd01f19aa94f17e48150ae9dbede94832142db19";
const GIR_NEW: &str = "c2987b0767006c3b9aea491bfed1646a3d7194639492b8d45b23b383";
const SPII: u64 = 0xc8de93111750e409;
const SPIR: u64 = 0x32d51b33508997fa;
const SKEYSEED: &str = "eec13ac67c2e072abb684ab4e7b6ce3e7f400af8b96bed48e113497ed337f8d4";
const DKM: &str = "bc83518f63b762874ac57947cdfae33a8d9724df0b83ee4b6df38c23fc2ad829f4d70b5a68dd1f5a52416f09758638aedf919c09a17c5298cdb703bb75b1005cba0109739aaa4efd2fe7534c95ad05e546e4419931270eddcab68ac1589d7fde47f5b9e8d5b614cb24ec3caf515497a9e99ee6f1b318ff153b539ef071dcaff9b41945dcb780700d69e5dc888a91de195c52825badfd0ab4c33cec71ab5c2b4badefe5455455ce5d8ae91721a2091bcccc1514e69482c9c8da1d9f0f187eedda916393570a8c0a8dfabc26d8ed31e8ea47662515972a22d11d692bc1fac6395aecd82a01ab78daafcd6f3070b1201f158a19331b5d21ceee66fccd2ea37bc07648b9539a52dbf797af53e31a0e8706dd86cf5081ebabd095f281d23c222dd3bc5abf06869017ca8f751cafcc85abea6ba88c139d1f32a12f7f486cf57eae5d85551b97f3963616d8f597c70efa98c1e1fa369fb77a80b1ec5fe533890672c4551172eab1b7fd68ad08c4d4c69f2a867302065ca730aa6915bc2cfb6d93820977";
const DKM_CHILD: &str = "c725012285d56e53244a9baaaf95abfca543708d333a3f3a86ba660e00edd4d489bcd631819fda0413382edd9f53d1ed718e056c2ad91d38de90f06cd434de70141d051c021e7ddd6e4137946b4770dca59a4decabdd866852eb557fdd995646613ff2923f5f23aa58c8fbd5ad52cf2eac9bda97faad5596695f4a747a0f1cc6a1f78b2181138fb19ac24574d2e6b3a40d6e688abb919a27d793b76568ec66bd099f6f476b705c1472d774a1516a11311b887688f36649e24227640ea8d8666b9f452217e7103b6f0a92b6adb8fbda650ba58d6ac13ac6f6b6361a5d1c44f1e9f22196c96295115c5d01a120e7265962d20353a049286908da776c2165f706a16f43d85fcd319f89c4386340bcb8ed10df38345cb68af719abaf997e9789a5f19a392dcecd78168ba282f0b30555c7a47031a3156d12d7158aa41b863b8394d30fec63120e89cbc5750eed7786f7d5961b1f2e6faca641ed776d2211bee757b68b77f94056172553715da9fbd1c9a8728f28a2f3c9714a4917490132562484cd";
const DKM_CHILD_DH: &str = "140a1f2a3c94318ece6edfa8c63f37d8d45982de8b6cbfe34011150db0253e34de3796d4aa579954a0bbf234794eb6e7ece2a8f91100f5507df4ee8e66c7813d4c0ff64d484a3494c54b0d9c605ea24234a49a010ce5c352feb9e1060c8c787229466296cdc9d11bb9d221ed2bb39544572464254ec02a0fbe777b07402c775eb6d3e53cd16214c707f851942cc7da92a811b6c5c82f29d9fc3751b0ebff9898fb14372402a6989ffb9cc32dfe7e2cea32fd882e09804d7fea34ce3b5eb6f303e095c48a452b0a3eccada81af22195ebbaad289aeabdab074c94e751496bde39d868ebf1d693f36d1c3c672bbb59c9f77aeb68de57d77da231b7f13d6d277f600c3d3086c4de7b3a59127f4cb9c118935574f30e1b7c88b52c8c3531fdbd38ee3d14c69e81803ced6e7501fa0180f6d110b648272002dc1ad5bf09dc83188011da1d48632e0d2453c8abdd8e9fd32a576aeb9ddfb0a024f674441c20a950d9bd8cd7b30933cc0d8e87b55e8aa9d913579b410417b3acc13c14bf73c457327873";
const SKEYSEED_REKEY: &str = "05f796c8df322a7e33283ae5fa2f376d8d5efa0ac3745fc548e430031424c121";

fn h(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap()
}

const P: PrfAlg = PrfAlg::HmacSha256;

#[test]
fn acvp_ikev2_kdf_sha256_skeyseed_dkm_child_rekey() {
    let (ni, nr) = (h(NI), h(NR));
    let seed = skeyseed(P, &ni, &nr, &h(GIR));
    assert_eq!(hex::encode(&*seed), SKEYSEED);
    let spis = [SPII.to_be_bytes(), SPIR.to_be_bytes()];
    let dkm = prf_plus(P, &seed, &[&ni, &nr, &spis[0], &spis[1]], 3072 / 8).unwrap();
    assert_eq!(hex::encode(&*dkm), DKM);
    let sk_d = &dkm[..32];
    let child = prf_plus(P, sk_d, &[&ni, &nr], 3072 / 8).unwrap();
    assert_eq!(hex::encode(&*child), DKM_CHILD);
    let child_dh = prf_plus(P, sk_d, &[&h(GIR_NEW), &ni, &nr], 3072 / 8).unwrap();
    assert_eq!(hex::encode(&*child_dh), DKM_CHILD_DH);
    let rekey = rekey_skeyseed(P, sk_d, &h(GIR_NEW), &ni, &nr);
    assert_eq!(hex::encode(&*rekey), SKEYSEED_REKEY);
}

/// The same vector through the typed API: the seven IKE SA keys are consecutive slices of the
/// DKM in §2.14's order, and CHILD SA keys slices of the child DKM in §2.17's order.
#[test]
fn typed_keys_are_the_dkm_split_in_rfc_order() {
    let (ni, nr) = (h(NI), h(NR));
    let suite = IkeSuite {
        encr: EncrAlg::Cbc(CbcAlg::Aes256),
        integ: IntegAlg::Hmac(HmacAlg::Sha256_128),
        prf: P,
        dh: DhGroup::Ecp256,
    };
    let k = IkeSaKeys::derive(&suite, &h(SKEYSEED), &ni, &nr, SPII, SPIR).unwrap();
    let dkm = h(DKM);
    let mut at = 0;
    for (key, len) in [
        (&k.sk_d, 32),
        (&k.sk_ai, 32),
        (&k.sk_ar, 32),
        (&k.sk_ei, 32),
        (&k.sk_er, 32),
        (&k.sk_pi, 32),
        (&k.sk_pr, 32),
    ] {
        assert_eq!(key.as_slice(), &dkm[at..at + len]);
        at += len;
    }
    // AES-GCM-16 with a 256-bit key: SK_e is 32 + 4 (salt) bytes, SK_a empty (RFC 5282 §7.1).
    let gcm = IkeSuite { encr: EncrAlg::Aead(AeadAlg::Aes256Gcm), integ: IntegAlg::None, ..suite };
    let k = IkeSaKeys::derive(&gcm, &h(SKEYSEED), &ni, &nr, SPII, SPIR).unwrap();
    assert!(k.sk_ai.is_empty() && k.sk_ar.is_empty());
    assert_eq!(k.sk_ei.as_slice(), &dkm[32..68]);
    assert_eq!(k.sk_er.as_slice(), &dkm[68..104]);
    assert_eq!(k.sk_pr.as_slice(), &dkm[136..168]);

    let esp =
        crypto::EspSuite::new(EncrAlg::Cbc(CbcAlg::Aes128), IntegAlg::Hmac(HmacAlg::Sha512_256))
            .unwrap();
    let c = ChildKeyMat::derive(P, &dkm[..32], &esp, None, &ni, &nr).unwrap();
    let child = h(DKM_CHILD);
    assert_eq!(c.encr_i.as_slice(), &child[..16]);
    assert_eq!(c.integ_i.as_slice(), &child[16..80]);
    assert_eq!(c.encr_r.as_slice(), &child[80..96]);
    assert_eq!(c.integ_r.as_slice(), &child[96..160]);
    let c = ChildKeyMat::derive(P, &dkm[..32], &esp, Some(&h(GIR_NEW)), &ni, &nr).unwrap();
    assert_eq!(c.encr_i.as_slice(), &h(DKM_CHILD_DH)[..16]);
    // ChaCha20-Poly1305 for ESP: 32-byte key + 4-byte salt each way (RFC 7634 §4).
    let chacha =
        crypto::EspSuite::new(EncrAlg::Aead(AeadAlg::ChaCha20Poly1305), IntegAlg::None).unwrap();
    let c = ChildKeyMat::derive(P, &dkm[..32], &chacha, None, &ni, &nr).unwrap();
    assert_eq!((c.encr_i.len(), c.integ_i.len()), (36, 0));
    assert_eq!(c.encr_r.as_slice(), &child[36..72]);
}

#[test]
fn prf_plus_limits_and_block_chaining() {
    // 255 blocks is the most prf+ can give (§2.13).
    assert!(prf_plus(P, b"k", &[b"s"], 255 * 32).is_ok());
    assert!(matches!(prf_plus(P, b"k", &[b"s"], 255 * 32 + 1), Err(Error::Config(_))));
    // T1 = prf(K, S | 0x01), T2 = prf(K, T1 | S | 0x02).
    let out = prf_plus(P, b"key", &[b"seed"], 40).unwrap();
    let prf = crypto::Prf::new(P, b"key");
    let t1 = prf.compute(&[b"seed", &[1]]);
    let t2 = prf.compute(&[&t1, b"seed", &[2]]);
    assert_eq!(&out[..32], t1.as_slice());
    assert_eq!(&out[32..], &t2[..8]);
    assert!(prf_plus(P, b"k", &[], 0).unwrap().is_empty());
}
