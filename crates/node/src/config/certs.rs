//! Certificate files for IKE X.509 authentication (RFC 7296 §3.6–3.8), named as swanctl.conf
//! names them: `local.certs` (our chain, end entity first), `remote.cacerts` (trust anchors: a
//! directory such as swanctl's `x509ca/`, or a list of files) and `remote.crls` (CRL files).
//! PEM ("CERTIFICATE", "X509 CRL") or DER, as `pki` and `openssl` write them.

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// A field that is one path or a list of them (`cacerts = "x509ca/"` or `["a.pem", "b.pem"]`).
#[derive(Deserialize, Debug, Clone)]
#[serde(untagged)]
pub(super) enum Paths {
    /// One path (for `cacerts`, a directory is read whole).
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl Paths {
    /// The paths, relative ones taken relative to `base` (the config file's directory).
    pub(super) fn resolve(&self, base: Option<&Path>) -> Vec<PathBuf> {
        let one = |s: &String| {
            let p = PathBuf::from(s);
            match base {
                Some(dir) if p.is_relative() => dir.join(p),
                _ => p,
            }
        };
        match self {
            Paths::One(p) => vec![one(p)],
            Paths::Many(v) => v.iter().map(one).collect(),
        }
    }
}

/// Every DER object in `bytes` with PEM tag `tag` (a PEM file may hold several), or `bytes`
/// itself if it is DER.
fn ders(bytes: &[u8], tag: &str) -> Result<Vec<Vec<u8>>, String> {
    if !bytes.starts_with(b"-----BEGIN") {
        return Ok(vec![bytes.to_vec()]);
    }
    let all = pem::parse_many(bytes).map_err(|e| format!("not PEM: {e}"))?;
    let out: Vec<Vec<u8>> =
        all.into_iter().filter(|p| p.tag() == tag).map(|p| p.into_contents()).collect();
    if out.is_empty() {
        return Err(format!("no PEM \"{tag}\" in it"));
    }
    Ok(out)
}

fn read(path: &Path, tag: &str) -> Result<Vec<Vec<u8>>, String> {
    let b = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    ders(&b, tag).map_err(|e| format!("{}: {e}", path.display()))
}

/// The certificates in the files `paths`, in order (a directory: its files, sorted by name).
pub fn certificates(paths: &[PathBuf]) -> Result<Vec<Vec<u8>>, String> {
    files(paths, "CERTIFICATE")
}

/// The CRLs in the files `paths`.
pub fn crls(paths: &[PathBuf]) -> Result<Vec<Vec<u8>>, String> {
    files(paths, "X509 CRL")
}

fn files(paths: &[PathBuf], tag: &str) -> Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| format!("{}: {e}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file())
                .collect();
            entries.sort();
            if entries.is_empty() {
                return Err(format!("{}: an empty directory", p.display()));
            }
            for f in entries {
                out.extend(read(&f, tag)?);
            }
        } else {
            out.extend(read(p, tag)?);
        }
    }
    Ok(out)
}
