//! Certificate files for IKE X.509 authentication (RFC 7296 §3.6–3.8), named as swanctl.conf
//! names them: `local.certs` (our chain, end entity first), `remote.cacerts` (trust anchors: a
//! directory such as swanctl's `x509ca/`, or a list of files) and `remote.crls` (CRL files).
//! PEM ("CERTIFICATE", "X509 CRL") or DER, as `pki` and `openssl` write them.

use super::error::{ConfigError, Ctx};
use ike::cert::{CertError, TrustStore};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toml::Spanned;

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

/// Our chain (`local.certs`) and the trust store of `remote.cacerts` and `remote.crls`, paths
/// relative to the config file; an error names the field.
pub(super) fn load(
    ctx: &Ctx<'_>,
    certs: &Spanned<Paths>,
    cacerts: &Spanned<Paths>,
    crl_files: Option<&Spanned<Paths>>,
) -> Result<(Vec<Vec<u8>>, Arc<TrustStore>), ConfigError> {
    let base = Path::new(ctx.file).parent();
    let chain = certificates(&certs.get_ref().resolve(base))
        .map_err(|e| ctx.err(certs.span(), "local.certs", e))?;
    let anchors = certificates(&cacerts.get_ref().resolve(base))
        .map_err(|e| ctx.err(cacerts.span(), "remote.cacerts", e))?;
    let crl_ders = match crl_files {
        None => Vec::new(),
        Some(c) => {
            crls(&c.get_ref().resolve(base)).map_err(|e| ctx.err(c.span(), "remote.crls", e))?
        }
    };
    let trust = TrustStore::new(&anchors, &crl_ders).map_err(|e| match (&e, crl_files) {
        (CertError::BadCrl { .. }, Some(c)) => ctx.err(c.span(), "remote.crls", e),
        _ => ctx.err(cacerts.span(), "remote.cacerts", e),
    })?;
    Ok((chain, Arc::new(trust)))
}

#[cfg(test)]
mod tests {
    use crate::config::connection::AuthConf;
    use crate::config::parse;
    use std::path::Path;
    use std::process::Command;

    fn openssl(d: &Path, args: &[&str]) {
        let out = Command::new("openssl").current_dir(d).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    const BASE: &str = "[interface]\nname = \"hipsec0\"\naddresses = [\"10.0.0.1/24\"]\n\
        [network]\nlocal = \"192.0.2.1:4500\"\n[[connection]]\nname = \"gw\"\n\
        remote_addrs = \"192.0.2.2\"\n";
    const CHILD: &str =
        "[connection.children.net]\nlocal_ts = [\"10.0.0.0/24\"]\nremote_ts = [\"10.1.0.0/24\"]\n";

    fn conf(local: &str, remote: &str) -> String {
        format!(
            "{BASE}[connection.local]\nauth = \"pubkey\"\n{local}\n\
             [connection.remote]\nauth = \"pubkey\"\nid = \"gw.example\"\n{remote}\n{CHILD}"
        )
    }

    /// swanctl's names read certificates, anchors from a directory and CRLs, with keys in the
    /// formats `openssl genpkey` (PKCS#8) and `pki --gen` ("EC PRIVATE KEY", "RSA PRIVATE
    /// KEY") write; each bad field is named.
    #[test]
    fn certs_cacerts_and_crls_by_swanctl_names() {
        if Command::new("openssl").arg("version").output().is_err() {
            println!("SKIPPED: needs openssl");
            return;
        }
        let d = std::env::temp_dir().join(format!("hipsec-certs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("x509ca")).unwrap();
        openssl(&d, &["ecparam", "-genkey", "-name", "prime256v1", "-noout", "-out", "ca.key"]);
        openssl(
            &d,
            &[
                "req",
                "-x509",
                "-key",
                "ca.key",
                "-out",
                "x509ca/ca.pem",
                "-subj",
                "/CN=ca",
                "-days",
                "2",
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
        );
        openssl(&d, &["genrsa", "-traditional", "-out", "me.key", "2048"]);
        openssl(
            &d,
            &["req", "-new", "-key", "me.key", "-subj", "/CN=me.example", "-out", "me.csr"],
        );
        openssl(
            &d,
            &[
                "x509",
                "-req",
                "-in",
                "me.csr",
                "-CA",
                "x509ca/ca.pem",
                "-CAkey",
                "ca.key",
                "-set_serial",
                "7",
                "-days",
                "1",
                "-out",
                "me.pem",
            ],
        );
        std::fs::write(d.join("index.txt"), "").unwrap();
        std::fs::write(d.join("crlnumber"), "01\n").unwrap();
        std::fs::write(
            d.join("ca.cnf"),
            "[ca]\ndefault_ca=c\n[c]\ndatabase=index.txt\ncrlnumber=crlnumber\n\
             certificate=x509ca/ca.pem\nprivate_key=ca.key\ndefault_md=sha256\n\
             default_crl_days=1\n",
        )
        .unwrap();
        openssl(&d, &["ca", "-config", "ca.cnf", "-gencrl", "-out", "crl.pem"]);
        let file = d.join("n.toml").display().to_string();
        let good = conf(
            "key = \"me.key\"\ncerts = [\"me.pem\"]",
            "cacerts = \"x509ca/\"\ncrls = [\"crl.pem\"]",
        );
        let c = parse(&file, &good).unwrap();
        let AuthConf::Certificate { key, chain, trust } = &c.connections[0].auth else {
            panic!("{:?}", c.connections[0].auth)
        };
        assert_eq!(key.alg(), crypto::SignatureAlg::RsaPkcs1Sha256);
        assert_eq!((chain.len(), trust.certreq_hashes().len()), (1, 1));
        // The CA's own "EC PRIVATE KEY" as ours, anchors as one file and `certs` as a string.
        let other = conf("key = \"ca.key\"\ncerts = \"me.pem\"", "cacerts = [\"x509ca/ca.pem\"]");
        let c = parse(&file, &other).unwrap();
        let AuthConf::Certificate { key, .. } = &c.connections[0].auth else { panic!() };
        assert_eq!(key.alg(), crypto::SignatureAlg::EcdsaP256Sha256);
        let field = |text: &str| parse(&file, text).unwrap_err().field().map(str::to_string);
        let bad = [
            (conf("key = \"me.key\"\ncerts = [\"me.pem\"]", ""), "remote.cacerts"),
            (
                conf("key = \"me.key\"\ncerts = [\"none.pem\"]", "cacerts = \"x509ca/\""),
                "local.certs",
            ),
            (
                conf("key = \"me.key\"\ncerts = [\"crl.pem\"]", "cacerts = \"x509ca/\""),
                "local.certs",
            ),
            (
                conf("key = \"me.key\"\ncerts = [\"me.pem\"]", "cacerts = \"me.key\""),
                "remote.cacerts",
            ),
            (
                conf(
                    "key = \"me.key\"\ncerts = [\"me.pem\"]",
                    "cacerts = \"x509ca/\"\ncrls = \"me.pem\"",
                ),
                "remote.crls",
            ),
            (conf("key = \"me.pem\"\ncerts = [\"me.pem\"]", "cacerts = \"x509ca/\""), "local.key"),
        ];
        for (text, want) in bad {
            assert_eq!(field(&text).as_deref(), Some(want), "{text}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }
}
