//! Tests of the MODP groups: the primes against OpenSSL's copy, known answers computed by
//! pyca/cryptography, live agreement with it, and the RFC 6989 / SP 800-56A range checks.

use super::*;
use std::process::Command;

fn h(s: &str) -> Vec<u8> {
    hex::decode(s.replace(' ', "")).unwrap()
}

fn known_answer(group: Modp, i: &str, gi: &str, r: &str, gr: &str, gir: &str) {
    let (ki, pub_i) = ModpPrivate::from_bytes(group, &h(i)).unwrap();
    let (kr, pub_r) = ModpPrivate::from_bytes(group, &h(r)).unwrap();
    assert_eq!(pub_i, h(gi));
    assert_eq!(pub_r, h(gr));
    assert_eq!(&ki.agree(&h(gr)).unwrap()[..], &h(gir)[..]);
    assert_eq!(&kr.agree(&h(gi)).unwrap()[..], &h(gir)[..]);
}

/// Vectors from pyca/cryptography 48.0.0 (its OpenSSL 3 backend drew the private values and
/// computed g^i, g^r and g^ir; `DHPrivateKey.exchange` pads g^ir to the prime's length as
/// RFC 7296 §2.14 asks):
///
/// ```text
/// params = dh.DHParameterNumbers(p, 2).parameters()
/// a, b = params.generate_private_key(), params.generate_private_key()
/// i, r = a.private_numbers().x, b.private_numbers().x
/// gi, gr = a.public_key().public_numbers().y, b.public_key().public_numbers().y
/// gir = a.exchange(b.public_key())
/// ```
#[test]
fn group_14_known_answer_from_pyca_cryptography() {
    known_answer(
        Modp::P2048,
        "0ee183de057fab80f2d4c9ed63bc96adb293db68edec40af791444cd",
        "ada7a6df6000ef9ed83fbedf78cb913c3012cf69c073843a8da5ee027de37e54 \
            2094e103a7f5835aefa5447b0d13e19fdb42b6d533f457fc08bbe013f3c4bb85 \
            ff0d0e8e35c2a61444bb211bbd8859b984884a955514ef9c16e1a73eaf58173e \
            a2edd8cf1074987fd0fed9714651acec7f5a95f971e3a071a63c590af2d9d013 \
            a0c994a7d65bb8755a697e561b262fc7b91f85c2eeac73c538e5972b286e1de4 \
            ec0dfa9a341f82ded704347a0936e4f5a2428981cc5954b970d8d4c2c941a4c1 \
            47ca78a3e649f7a9af91ac6a1149399f3abbd7ec5bc1beda0e35f881e5a9ad7f \
            74470b5b38500dd3dbc5f4e31264b9cb6bb5203e0e6b6ad22a1e7d09846c2db7",
        "7fdff9ac5d07dacdba2b5b5e3bc38a3534cdd4f33ddd35530f56e56e",
        "f12e249a2d0f3e070340ef50d63de87faada265b85799c0253111720ee7f6aea \
            f670def8e85b8cbacd7f4476358bf45dd7f9f441d50d370de673cc13fe3b3eae \
            f3ea2423e9b81dbdb596d00f676dc295034519cf11d3d6a33810b01874542498 \
            632fd8dc39d16fa5d29adeb51f60f3b62c7dca0eaa830487297928f3a8e19726 \
            04b8bbfaebf5d5c2f0a963763b6c3aedd136a2f72ba43b8ed740e95859598956 \
            1af96e1b66248d3b830654344433ad812ec5204d6437cb54d4bbc4e3b090f74f \
            e793d2e507b38c82c8223006ba0e14cad6186515c7afe778d21b3e3884f50d0a \
            1eff3f052e6f5662dad669a608b1c4a9c0e6f02f304c44048abcb23acbd727eb",
        "9a87432b49fa28030b1b81033db24bb5ea4c607f6c75c804388a3f22141211dd \
            66196fdf82462fba4f45a43519e1b7d841350ce9c391694992b109f76410cbc5 \
            d53cafc5433d2e9547916c8aaa6c8c169616e08f9fff87cc793269a469af88cb \
            82987f0f879f348dc85e0da7b238b72884fec5695ddb6a7fe22fe0f6b82dadb8 \
            ae080a81f77cf2a70caad42c470cb0cfb1ebde2cbe22bad65ad331b66a575401 \
            d9470c4ef32f702e5a4a39a036b612cbfe9b34e0e6b86aba4a5b8457389b8d58 \
            17ce1bb3f7d66e2b61d966a702d8ed5cd59d401ee806bc46a80346e3bac4e3f0 \
            49e4bd08620ee0cf45545ba326c440a4177f6f0bcf3fa0245e0d1d8e2e52f343",
    );
}

/// As above, for the 3072-bit group.
#[test]
fn group_15_known_answer_from_pyca_cryptography() {
    known_answer(
        Modp::P3072,
        "017a5bec6e4e16b39678806c43b5cde534d96429fb3fb26bc6f50f49278c9af2 \
            b008e4",
        "3ced1d73806fc34eba4bee8d0c5dc6d200816ff66ca52c097e4a41b62b7a9d45 \
            29e2f6af45bd588c11cd11d5927db276516665758ff3c02d5a58ca3e6f5de865 \
            eafa18f97fad67ec9a048fe5d17bb184e050b200e8ee56bc1eb25f0989d248f1 \
            0ee8fba1e9e55a442416d3aba390a8f72d856c9a6e8027cab410c44c598c9460 \
            c338176d0da78be0c9e18ea2a4b3aac3ca83f91b6775f9c66ddc9eb37516e129 \
            aa8e0edff53383f1edfebe57de95e87f0cc4af37fa435c2638530030e41bf275 \
            1641f426162d7d748d8442fac2759974cfe0f24d104d00819efaaa7c87a93576 \
            d4e749666a77c5d87c29d57f1fa2e8f47d1591b2ed69c0eb5bebb38ea8710ec8 \
            733b0f61759fa773dcfd1a3c79ade18823c1f4bbcb44af9bd513742e08ae413d \
            fe5d1c9e15549d63b192848a8e3e5c7dc06958f84e2704d4dc8c679677dce0f0 \
            882a5e757bc97d08a48dd816a83e0f0e70cb4e7d70278b474762803cd69d8ec6 \
            815db620168f4aa3eaa7c736504e94683f7153e439e513119c2789b6b750d132",
        "04768e804cc068f2a2583ffda9a4dc9e7a6931b8757ea29c8ca0867f437fe467 \
            897f18",
        "fb4fafa76565105cd4431af598f38cb714a2c931e2e3541d1650fd3a0d865aa2 \
            d34265ab9c3e946ee0df9777400bd4571d1f26ea54300a8de4fa4a53dd4c8c46 \
            41c05bbf4a28738ff23ca6a86db65637007bac1f0466b2696a0024531aaed441 \
            f66242d9ee928b41380907c8ed77fd0ed369a965f01c72e2aa1197e0fa554368 \
            3f5e8bd276d89d2f0e7a94f4cbf92f298b9f22fe28d7b5abbc05c938f44b6a61 \
            fcebd12cc8e5860752402e068ae4c4742871bcac85012a2cb2414438060d548e \
            8f5ebb30a30944670d20ac7ccfd756509448251ef3bc92886bd147a61e782070 \
            b6ee42e9664280059c10873b8e8392bd3b8f2de29e8ccb3d19539445035e2a8a \
            40e11dc35fff1bd5c8b4d0912119a7108d8c4430eeaa3f3f6afb20277dc338ec \
            b8a6425a2a726ee93c1701b0f32d57387f9ea29e35eac0548db7acd405948575 \
            d8fb1e8bc19033c1cbc2f87c46e2b60f9a4d61bb05de89f84adb800fb6807d82 \
            e4e9dfc4b1b16290d248f3b0815c0b8b12fe00ad8a363b49ea0cfc83396699f1",
        "ee7982f08ffc96ffe1c6387024099b7aded0a40071cb18b03cfc5e4d9e205574 \
            156e0d225fe91d4bca51d8c75b01edb98c9b8f6156d1ec39244d73798e83b853 \
            bc54de604619c63787a151808bfb046e9b259ba56d5bd9600307b50d7cc228ab \
            14f9f16b57a26183ff0f64f326c8ff0c114bfcb077d30d53cf1ea3f8c3af602f \
            efc6aa1c869c5b92401e9c8e9eb1be8d3c93ba0e903d2f3e864b97d663e03d41 \
            be9a2bd64e393af4bb2850a5c12e0d4046aad538dee627fa01dd8b1196438d97 \
            0312832b616521bd5549defb261254248d87e31ff4c802cd254df7fc95e243f9 \
            32fcfde5239e4851a006792387dcef49d1a59f466133628cb68b4fb7533725e1 \
            5996ac2c3aebd58052f646f76792cbe6908ae80ff7620b4ff77b47874dcd46a0 \
            faebe466970e3e2b3f70f561808d170d830e5fb28f71ed1c30ae8e7353fefb81 \
            7bd998a101b2ff119ff7b0105ba083ca7b14c11679cb374cb7fb60f735cc4d20 \
            e47fec987b99974abfce66e11099a3448c65d0d5b0c7f1dcba2d337226005a31",
    );
}

/// The primes are OpenSSL's `modp_2048` and `modp_3072` named groups (RFC 3526), read from
/// `openssl genpkey -genparam` output.
#[test]
fn primes_match_openssl_rfc3526_groups() {
    for (name, ours) in [("modp_2048", to_be(&MODP_2048_P)), ("modp_3072", to_be(&MODP_3072_P))] {
        let out = Command::new("openssl")
            .args(["genpkey", "-genparam", "-algorithm", "DH", "-pkeyopt"])
            .arg(format!("group:{name}"))
            .output();
        let Some(out) = out.ok().filter(|o| o.status.success()) else {
            println!("SKIPPED: openssl cannot make {name} parameters");
            return;
        };
        let mut asn1 = Command::new("openssl")
            .args(["asn1parse"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        asn1.stdin.take().unwrap().write_all(&out.stdout).unwrap();
        let text = String::from_utf8(asn1.wait_with_output().unwrap().stdout).unwrap();
        // The first INTEGER of PKCS#3 DHParameter is the prime.
        let line = text.lines().find(|l| l.contains("INTEGER")).unwrap();
        let p = h(line.rsplit(':').next().unwrap().trim());
        assert_eq!(p, ours, "{name}");
    }
}

/// A fresh key pair of ours (512-bit exponent) agrees with one that pyca/cryptography draws.
#[test]
fn fresh_keys_agree_with_pyca_cryptography() {
    for (group, p) in [(Modp::P2048, to_be(&MODP_2048_P)), (Modp::P3072, to_be(&MODP_3072_P))] {
        let (ours, our_public) = ModpPrivate::generate(group).unwrap();
        let script = format!(
            "from cryptography.hazmat.primitives.asymmetric import dh\n\
             p = int('{}', 16); L = {}\n\
             k = dh.DHParameterNumbers(p, 2).parameters().generate_private_key()\n\
             peer = dh.DHPublicNumbers(int('{}', 16), dh.DHParameterNumbers(p, 2)).public_key()\n\
             print(k.public_key().public_numbers().y.to_bytes(L, 'big').hex())\n\
             print(k.exchange(peer).hex())\n",
            hex::encode(&p),
            group.len(),
            hex::encode(&our_public),
        );
        let out = Command::new("python3").arg("-c").arg(&script).output();
        let Some(out) = out.ok().filter(|o| o.status.success()) else {
            println!("SKIPPED: python3 with the cryptography package is not available");
            return;
        };
        let text = String::from_utf8(out.stdout).unwrap();
        let mut lines = text.lines();
        let (their_public, their_secret) = (h(lines.next().unwrap()), h(lines.next().unwrap()));
        assert_eq!(&ours.agree(&their_public).unwrap()[..], &their_secret[..]);
    }
}

/// The range check: NIST SP 800-56A Rev. 3 §5.6.2.3.1 "Verify that 2 ≤ y ≤ p − 2"; wrong
/// lengths are refused before any arithmetic (RFC 7296 §3.4).
#[test]
fn peer_values_outside_two_to_p_minus_two_are_refused() {
    for (group, p) in [(Modp::P2048, to_be(&MODP_2048_P)), (Modp::P3072, to_be(&MODP_3072_P))] {
        let n = group.len();
        let (k, public) = ModpPrivate::generate(group).unwrap();
        assert_eq!(public.len(), n);
        let num = |v: u8| {
            let mut b = vec![0u8; n];
            b[n - 1] = v;
            b
        };
        let minus = |d: u8| {
            let mut b = p.clone();
            b[n - 1] -= d; // p ends in 0xFF
            b
        };
        for bad in [num(0), num(1), minus(1), p.clone(), vec![0xff; n]] {
            assert_eq!(check_public(group, &bad), Err(CryptoError::Integrity));
            assert_eq!(k.agree(&bad).unwrap_err(), CryptoError::Integrity);
        }
        for good in [num(2), minus(2)] {
            assert_eq!(check_public(group, &good), Ok(()));
            assert!(k.agree(&good).is_ok());
        }
        assert_eq!(check_public(group, &public[1..]), Err(CryptoError::Length));
        assert_eq!(k.agree(&[&public[..], &[0]].concat()).unwrap_err(), CryptoError::Length);
        assert!(ModpPrivate::from_bytes(group, &[0, 0]).is_err());
        assert!(ModpPrivate::from_bytes(group, &vec![1; n + 1]).is_err());
    }
}
