//! The rfc822Name entries of a certificate's subjectAltName (RFC 5280 §4.2.1.6), which webpki
//! does not expose, for ID_RFC822_ADDR identities (RFC 4945 §3.1.4), and the raw key inside a
//! SubjectPublicKeyInfo for the classic AUTH methods. A small DER walk over a
//! certificate webpki has already validated; it still never indexes out of bounds.

/// One TLV at the start of `der` (definite lengths of up to four octets): tag, contents and
/// what follows.
pub(super) fn tlv(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let octets = rest.get(..n)?;
        (octets.iter().fold(0usize, |a, &b| (a << 8) | usize::from(b)), rest.get(n..)?)
    };
    let contents = rest.get(..len)?;
    Some((tag, contents, rest.get(len..)?))
}

/// The TLVs in `der`, one after another (stops at the first malformed one).
fn elements(mut der: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    std::iter::from_fn(move || {
        let (tag, contents, rest) = tlv(der)?;
        der = rest;
        Some((tag, contents))
    })
}

/// id-ce-subjectAltName, 2.5.29.17 (RFC 5280 §4.2.1.6): the OID's contents octets.
const OID_SAN: &[u8] = &[0x55, 0x1d, 0x11];
/// GeneralName's `rfc822Name [1] IA5String`, implicitly tagged.
const TAG_RFC822: u8 = 0x81;
/// TBSCertificate's `extensions [3] EXPLICIT Extensions`.
const TAG_EXTENSIONS: u8 = 0xa3;

/// The rfc822Name values of the subjectAltName of the DER certificate `cert`.
pub(super) fn rfc822_names(cert: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let Some((0x30, certificate, _)) = tlv(cert) else { return out };
    let Some((0x30, tbs, _)) = tlv(certificate) else { return out };
    let Some((_, exts)) = elements(tbs).find(|(t, _)| *t == TAG_EXTENSIONS) else { return out };
    let Some((0x30, exts, _)) = tlv(exts) else { return out };
    for (_, ext) in elements(exts) {
        let mut fields = elements(ext);
        let Some((0x06, oid)) = fields.next() else { continue };
        if oid != OID_SAN {
            continue;
        }
        // extnValue is the last field (after an optional `critical` BOOLEAN).
        let Some((0x04, value)) = fields.find(|(t, _)| *t == 0x04) else { continue };
        let Some((0x30, names, _)) = tlv(value) else { continue };
        out.extend(elements(names).filter(|(t, _)| *t == TAG_RFC822).map(|(_, v)| v));
    }
    out
}

/// Whether the address `id` is `name`. RFC 5280 §7.5: "Two email addresses are considered to
/// match if: 1) the local-part of each name is an exact match, AND 2) the host-part of each
/// name matches using a case-insensitive ASCII comparison."
pub(super) fn rfc822_matches(name: &[u8], id: &[u8]) -> bool {
    let split = |b: &[u8]| {
        let at = b.iter().rposition(|&c| c == b'@')?;
        Some((b.get(..at)?.to_vec(), b.get(at + 1..)?.to_vec()))
    };
    match (split(name), split(id)) {
        (Some((nl, nd)), Some((il, id))) => nl == il && nd.eq_ignore_ascii_case(&id),
        _ => false,
    }
}

/// The key inside a DER SubjectPublicKeyInfo (RFC 5280 §4.1.2.7): the BIT STRING's contents
/// after its unused-bits octet, which must be zero.
pub(super) fn spki_key(spki: &[u8]) -> Option<&[u8]> {
    let (0x30, fields, _) = tlv(spki)? else { return None };
    let (0x30, _, rest) = tlv(fields)? else { return None };
    let (0x03, bits, _) = tlv(rest)? else { return None };
    match bits.split_first()? {
        (0, key) => Some(key),
        _ => None,
    }
}
