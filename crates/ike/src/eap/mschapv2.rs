//! MS-CHAPv2's computations (RFC 2759 §8): NtPasswordHash (MD4 of the UTF-16LE password),
//! ChallengeHash (SHA-1), ChallengeResponse (three DES encryptions), GenerateNTResponse and
//! GenerateAuthenticatorResponse; and the MSK EAP-MSCHAPv2 exports (RFC 3079 §3.4 master and
//! start keys), which IKEv2 uses as the AUTH key after EAP (RFC 7296 §2.16).
//!
//! MD4 and DES are RustCrypto's `md4` and `des`; SHA-1 is the crypto crate's. None of these
//! is used for anything but MS-CHAPv2, whose security rests on them as RFC 2759 defines it.

use crate::keys::Secret;
use crypto::digest::sha1;
use des::Des;
use des::cipher::{BlockEncrypt, KeyInit, generic_array::GenericArray};
use md4::{Digest, Md4};
use zeroize::Zeroizing;

/// The MSK's length: EAP-MSCHAPv2 exports 64 octets (two 16-octet start keys, then 32 zero
/// octets), as strongSwan's eap-mschapv2 plugin and Windows do.
pub const MSK_LEN: usize = 64;

/// `NtPasswordHash(Password)` (RFC 2759 §8.3): MD4 of the password in UTF-16LE.
pub fn nt_password_hash(password: &str) -> Zeroizing<[u8; 16]> {
    let utf16: Zeroizing<Vec<u8>> =
        Zeroizing::new(password.encode_utf16().flat_map(u16::to_le_bytes).collect());
    Zeroizing::new(Md4::digest(utf16.as_slice()).into())
}

/// `HashNtPasswordHash(PasswordHash)` (RFC 2759 §8.4): MD4 of the hash.
pub fn hash_nt_password_hash(hash: &[u8; 16]) -> Zeroizing<[u8; 16]> {
    Zeroizing::new(Md4::digest(hash).into())
}

/// The user name ChallengeHash uses: RFC 2759 §4 — "When computing the NT-Response field
/// contents, only the user name is used, without any associated Windows NT domain name" — so
/// whatever precedes a backslash is dropped.
pub fn user_part(name: &[u8]) -> &[u8] {
    match name.iter().position(|&b| b == b'\\') {
        Some(i) => name.get(i + 1..).unwrap_or_default(),
        None => name,
    }
}

/// `ChallengeHash(PeerChallenge, AuthenticatorChallenge, UserName)` (RFC 2759 §8.2): the first
/// 8 octets of SHA-1 over the three.
pub fn challenge_hash(peer: &[u8; 16], authenticator: &[u8; 16], user: &[u8]) -> [u8; 8] {
    let h = sha1(&[peer, authenticator, user_part(user)]);
    let mut c = [0u8; 8];
    c.copy_from_slice(&h[..8]);
    c
}

/// A 7-octet key spread over 8 octets, seven bits each. RFC 2759 §8.6 DesEncrypt: "Note that
/// the DES algorithm takes as input a 64-bit stream where the 8th, 16th, 24th, etc. bits are
/// parity bits ignored by the encrypting algorithm. Unless you write your own DES to accept
/// 56-bit input without parity, you will need to insert the parity bits yourself." The low
/// bit of each octet, the parity bit, is left zero: the DES here ignores it.
fn des_key(k: &[u8]) -> [u8; 8] {
    let mut bits: u64 = 0;
    for &b in k.iter().take(7) {
        bits = (bits << 8) | u64::from(b);
    }
    let mut out = [0u8; 8];
    for (i, o) in out.iter_mut().enumerate() {
        *o = (((bits >> (49 - 7 * i)) & 0x7f) as u8) << 1;
    }
    out
}

/// `ChallengeResponse(Challenge, PasswordHash)` (RFC 2759 §8.5): the hash zero-padded to 21
/// octets, three 7-octet DES keys, each encrypting the challenge.
pub fn challenge_response(challenge: &[u8; 8], password_hash: &[u8; 16]) -> [u8; 24] {
    let mut z = Zeroizing::new([0u8; 21]);
    z[..16].copy_from_slice(password_hash);
    let mut out = [0u8; 24];
    for (chunk, key) in out.chunks_exact_mut(8).zip(z.chunks_exact(7)) {
        let k = Zeroizing::new(des_key(key));
        let cipher = Des::new(GenericArray::from_slice(k.as_slice()));
        let mut block = GenericArray::clone_from_slice(challenge);
        cipher.encrypt_block(&mut block);
        chunk.copy_from_slice(&block);
    }
    out
}

/// `GenerateNTResponse` (RFC 2759 §8.1) from the password's hash.
pub fn generate_nt_response(
    authenticator: &[u8; 16],
    peer: &[u8; 16],
    user: &[u8],
    password_hash: &[u8; 16],
) -> [u8; 24] {
    challenge_response(&challenge_hash(peer, authenticator, user), password_hash)
}

/// RFC 2759 §8.7's Magic1: "Magic server to client signing constant".
const AUTH_MAGIC1: &[u8] = b"Magic server to client signing constant";
/// RFC 2759 §8.7's Magic2: "Pad to make it do more than one iteration".
const AUTH_MAGIC2: &[u8] = b"Pad to make it do more than one iteration";

/// `GenerateAuthenticatorResponse` (RFC 2759 §8.7): the 20 octets the Success message carries
/// as `S=` and 40 upper-case hex digits.
pub fn authenticator_response(
    password_hash: &[u8; 16],
    nt_response: &[u8; 24],
    peer: &[u8; 16],
    authenticator: &[u8; 16],
    user: &[u8],
) -> [u8; 20] {
    let hash_hash = hash_nt_password_hash(password_hash);
    let digest = sha1(&[hash_hash.as_slice(), nt_response, AUTH_MAGIC1]);
    let challenge = challenge_hash(peer, authenticator, user);
    sha1(&[&digest, &challenge, AUTH_MAGIC2])
}

/// The Success message's text: `S=<AuthenticatorResponse in upper-case hex> M=<message>`
/// (RFC 2759 §5).
pub fn success_message(auth_response: &[u8; 20], message: &str) -> Vec<u8> {
    let mut s = String::with_capacity(2 + 40 + 3 + message.len());
    s.push_str("S=");
    for b in auth_response {
        s.push_str(&format!("{b:02X}"));
    }
    s.push_str(" M=");
    s.push_str(message);
    s.into_bytes()
}

/// RFC 3079 §3.4's Magic1: "This is the MPPE Master Key".
const KEY_MAGIC1: &[u8] = b"This is the MPPE Master Key";
/// RFC 3079 §3.4's Magic2.
const KEY_MAGIC2: &[u8] =
    b"On the client side, this is the send key; on the server side, it is the receive key.";
/// RFC 3079 §3.4's Magic3.
const KEY_MAGIC3: &[u8] =
    b"On the client side, this is the receive key; on the server side, it is the send key.";
const SHS_PAD1: [u8; 40] = [0; 40];
const SHS_PAD2: [u8; 40] = [0xf2; 40];

/// `GetMasterKey(PasswordHashHash, NTResponse)` (RFC 3079 §3.4): 16 octets.
pub fn master_key(password_hash_hash: &[u8; 16], nt_response: &[u8; 24]) -> Zeroizing<[u8; 16]> {
    let d = Zeroizing::new(sha1(&[password_hash_hash, nt_response, KEY_MAGIC1]));
    let mut m = Zeroizing::new([0u8; 16]);
    m.copy_from_slice(&d[..16]);
    m
}

/// `GetAsymmetricStartKey(MasterKey, 16, IsSend, IsServer)` (RFC 3079 §3.4): the
/// authenticator's receive key (Magic2) or send key (Magic3), 16 octets.
pub fn asymmetric_start_key(
    master: &[u8; 16],
    is_send: bool,
    is_server: bool,
) -> Zeroizing<[u8; 16]> {
    let magic = if is_send == is_server { KEY_MAGIC3 } else { KEY_MAGIC2 };
    let d = Zeroizing::new(sha1(&[master, &SHS_PAD1, magic, &SHS_PAD2]));
    let mut k = Zeroizing::new([0u8; 16]);
    k.copy_from_slice(&d[..16]);
    k
}

/// The MSK: the authenticator's MasterReceiveKey, then its MasterSendKey, then 32 zero octets
/// (the layout strongSwan's eap-mschapv2 and Windows use; RFC 7296 §2.16 then keys AUTH with
/// it).
pub fn msk(password_hash: &[u8; 16], nt_response: &[u8; 24]) -> Secret {
    let hh = hash_nt_password_hash(password_hash);
    let m = master_key(&hh, nt_response);
    let mut out = Secret::new(Vec::with_capacity(MSK_LEN));
    out.extend_from_slice(asymmetric_start_key(&m, false, true).as_slice());
    out.extend_from_slice(asymmetric_start_key(&m, true, true).as_slice());
    out.resize(MSK_LEN, 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h<const N: usize>(s: &str) -> [u8; N] {
        let v = hex::decode(s.replace(' ', "")).unwrap_or_default();
        <[u8; N]>::try_from(v.as_slice()).unwrap_or([0; N])
    }

    /// RFC 2759 §9.2 "Hash Example": "Intermediate values for user name "User" and password
    /// "clientPass". All numeric values are hexadecimal." The values below are that section's.
    #[test]
    fn rfc2759_section_9_2() {
        let auth: [u8; 16] = h("5B 5D 7C 7D 7B 3F 2F 3E 3C 2C 60 21 32 26 26 28");
        let peer: [u8; 16] = h("21 40 23 24 25 5E 26 2A 28 29 5F 2B 3A 33 7C 7E");
        let pw = nt_password_hash("clientPass");
        assert_eq!(*pw, h::<16>("44 EB BA 8D 53 12 B8 D6 11 47 44 11 F5 69 89 AE"));
        assert_eq!(
            *hash_nt_password_hash(&pw),
            h::<16>("41 C0 0C 58 4B D2 D9 1C 40 17 A2 A1 2F A5 9F 3F")
        );
        assert_eq!(challenge_hash(&peer, &auth, b"User"), h::<8>("D0 2E 43 86 BC E9 12 26"));
        let nt = generate_nt_response(&auth, &peer, b"User", &pw);
        assert_eq!(
            nt,
            h::<24>("82 30 9E CD 8D 70 8B 5E A0 8F AA 39 81 CD 83 54 42 33 11 4A 3D 85 D6 DF")
        );
        let a = authenticator_response(&pw, &nt, &peer, &auth, b"User");
        let s = success_message(&a, "x");
        assert_eq!(&s[..42], b"S=407A5589115FD0D6209F510FE9C04566932CDA56");
        // The domain is not hashed (RFC 2759 §4).
        assert_eq!(generate_nt_response(&auth, &peer, b"BIGCO\\User", &pw), nt);
    }

    /// RFC 3079 §3.5.3 "Sample Key Derivations" for 128-bit keys, from the same RFC 2759
    /// inputs: MasterKey FD EC E3 71 7A 8C 83 8C B3 88 E5 27 AE 3C DD 31 and SendStartKey128
    /// 8B 7C DC 14 9B 99 3A 1B A1 18 CB 15 3F 56 DC CB (the values as other implementations'
    /// tests quote them; the RFC text itself was not at hand).
    #[test]
    fn rfc3079_master_and_send_key() {
        let pw = nt_password_hash("clientPass");
        let nt: [u8; 24] =
            h("82 30 9E CD 8D 70 8B 5E A0 8F AA 39 81 CD 83 54 42 33 11 4A 3D 85 D6 DF");
        let m = master_key(&hash_nt_password_hash(&pw), &nt);
        assert_eq!(*m, h::<16>("FD EC E3 71 7A 8C 83 8C B3 88 E5 27 AE 3C DD 31"));
        let send = asymmetric_start_key(&m, true, true);
        assert_eq!(*send, h::<16>("8B 7C DC 14 9B 99 3A 1B A1 18 CB 15 3F 56 DC CB"));
        let k = msk(&pw, &nt);
        assert_eq!(k.len(), MSK_LEN);
        assert_eq!(&k[16..32], send.as_slice());
        assert_eq!(&k[32..], &[0u8; 32]);
    }
}
