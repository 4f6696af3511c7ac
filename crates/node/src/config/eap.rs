//! EAP users for connections whose road warriors authenticate with EAP-MSCHAPv2 (RFC 7296
//! §2.16): `remote.auth = "eap-mschapv2"` on the connection, as swanctl's `remote { auth =
//! eap-mschapv2 }`, and one `[secrets.NAME]` per user with `eap_id` and `secret`, as
//! swanctl's `secrets { eap-carol { id = carol secret = ... } }`. The passwords are hashed
//! (NtPasswordHash, RFC 2759 §8.3) as they are read and never kept, logged or shown.

use super::connection::RawSecret;
use super::error::{ConfigError, Ctx};
use ike::eap::{EapConfig, EapUser};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The method name `remote.auth` takes for EAP-MSCHAPv2 (swanctl's).
pub const EAP_MSCHAPV2: &str = "eap-mschapv2";

/// Every `[secrets.NAME]` with an `eap_id`, as the users EAP-MSCHAPv2 checks. `at` is the
/// connection asking (an error names it when there is no user at all).
pub(super) fn users(
    ctx: &Ctx<'_>,
    at: std::ops::Range<usize>,
    secrets: &BTreeMap<String, RawSecret>,
) -> Result<EapConfig, ConfigError> {
    let mut users: Vec<EapUser> = Vec::new();
    for s in secrets.values() {
        let Some(id) = &s.eap_id else { continue };
        let name = id.get_ref();
        if name.is_empty() || name.len() > 255 {
            return Err(ctx.err(id.span(), "eap_id", "want a user name of 1 to 255 bytes"));
        }
        if users.iter().any(|u| u.identity == name.as_bytes()) {
            return Err(ctx.err(id.span(), "eap_id", format!("{name:?} has two secrets")));
        }
        let password = s.secret.get_ref();
        if password.is_empty() {
            return Err(ctx.err(s.secret.span(), "secret", "empty EAP password"));
        }
        users.push(EapUser::new(name, password));
    }
    if users.is_empty() {
        return Err(ctx.err(
            at,
            "secrets",
            "remote.auth = \"eap-mschapv2\" needs [secrets.NAME] entries with eap_id and secret",
        ));
    }
    Ok(EapConfig { users: Arc::new(users) })
}

/// Our side of a connection whose peers use EAP: `local.auth = "pubkey"` with our key and
/// certificate chain (RFC 7296 §2.16: the responder authenticates with a public-key signature
/// before EAP; the road warrior checks our certificate). `remote.cacerts` is optional here:
/// the peers present no certificate.
pub(super) fn server_auth(
    ctx: &Ctx<'_>,
    r: &super::connection::RawConnection,
    local_method: &str,
) -> Result<super::connection::AuthConf, ConfigError> {
    let at = r.name.span();
    if local_method != "pubkey" {
        return Err(ctx.err(
            at,
            "local.auth",
            "remote.auth = \"eap-mschapv2\" needs local.auth = \"pubkey\" with local.certs",
        ));
    }
    let local = r.local.as_ref();
    let key = local.and_then(|a| a.key.as_ref()).ok_or_else(|| {
        ctx.err(at.clone(), "local.key", "auth = \"pubkey\" needs our private key file")
    })?;
    let certs = local.and_then(|a| a.certs.as_ref()).ok_or_else(|| {
        ctx.err(at.clone(), "local.certs", "EAP road warriors authenticate us by our certificate")
    })?;
    let sk = super::keys::private_key(&super::connection::key_path(ctx, key))
        .map_err(|e| ctx.err(key.span(), "local.key", e))?;
    let remote = r.remote.as_ref();
    let (chain, trust) = match remote.and_then(|a| a.cacerts.as_ref()) {
        Some(cacerts) => {
            super::certs::load(ctx, certs, cacerts, remote.and_then(|a| a.crls.as_ref()))?
        }
        None => {
            let base = std::path::Path::new(ctx.file).parent();
            let chain = super::certs::certificates(&certs.get_ref().resolve(base))
                .map_err(|e| ctx.err(certs.span(), "local.certs", e))?;
            let empty = ike::cert::TrustStore::new(&[], &[])
                .map_err(|e| ctx.err(certs.span(), "remote.cacerts", e))?;
            (chain, Arc::new(empty))
        }
    };
    Ok(super::connection::AuthConf::Certificate { key: Arc::new(sk), chain, trust })
}

#[cfg(test)]
mod tests {
    use crate::config::parse;
    use std::process::Command;

    const HEAD: &str = "[interface]\nname = \"hipsec0\"\naddresses = [\"10.0.0.1/24\"]\n\
        [network]\nlocal = \"192.0.2.1:4500\"\n[[connection]]\nname = \"rw\"\n\
        remote_addrs = \"%any\"\npools = [\"rw\"]\n";

    fn conf(local: &str, remote: &str, child: &str, secrets: &str) -> String {
        format!(
            "{HEAD}[connection.local]\n{local}\nid = \"gw.example\"\n[connection.remote]\n\
             {remote}\n[connection.children.net]\nlocal_ts = [\"10.0.0.0/24\"]\n\
             remote_ts = [\"10.3.0.0/24\"]\n{child}\n{secrets}\
             [pools.rw]\naddrs = \"10.3.0.0/24\"\n"
        )
    }

    /// swanctl's shape (`remote { auth = eap-mschapv2 }`, `secrets { eap-carol { id = carol
    /// secret = ... } }`) in hipsec's names; each bad field is named; the password is hashed
    /// at once and appears in no Debug output.
    #[test]
    fn eap_mschapv2_connection_and_its_users() {
        let d = std::env::temp_dir().join(format!("hipsec-eap-conf-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let made = Command::new("openssl")
            .current_dir(&d)
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"])
            .args(["-nodes", "-keyout", "gw.key", "-out", "gw.pem", "-subj", "/CN=gw.example"])
            .args(["-days", "2"])
            .output();
        if !made.is_ok_and(|o| o.status.success()) {
            println!("SKIPPED: needs openssl");
            return;
        }
        let file = d.join("n.toml").display().to_string();
        let local = "auth = \"pubkey\"\nkey = \"gw.key\"\ncerts = [\"gw.pem\"]";
        let eap = "auth = \"eap-mschapv2\"";
        let carol = "[secrets.eap-carol]\neap_id = \"carol\"\nsecret = \"hunter2-carol\"\n";
        let c = parse(&file, &conf(local, eap, "", carol)).unwrap();
        let users = &c.connections[0].eap.as_ref().expect("EAP users").users;
        assert_eq!(users.len(), 1);
        assert_eq!(users[0].identity, b"carol");
        assert_eq!(*users[0].password_hash, *ike::eap::mschapv2::nt_password_hash("hunter2-carol"));
        assert!(!format!("{c:?}").contains("hunter2"), "the password in Debug output");

        let field = |text: String| parse(&file, &text).unwrap_err().field().map(str::to_string);
        let no_users = conf(local, eap, "", "");
        assert_eq!(field(no_users).as_deref(), Some("secrets"));
        let psk = conf("auth = \"psk\"", eap, "", carol);
        assert_eq!(field(psk).as_deref(), Some("local.auth"));
        let no_cert = conf("auth = \"pubkey\"\nkey = \"gw.key\"", eap, "", carol);
        assert_eq!(field(no_cert).as_deref(), Some("local.certs"));
        let empty = conf(local, eap, "", "[secrets.e]\neap_id = \"\"\nsecret = \"x\"\n");
        assert_eq!(field(empty).as_deref(), Some("eap_id"));
        let twice = format!("{carol}[secrets.again]\neap_id = \"carol\"\nsecret = \"y\"\n");
        assert_eq!(field(conf(local, eap, "", &twice)).as_deref(), Some("eap_id"));
        let unknown = conf(local, "auth = \"eap-md5\"", "", carol);
        assert_eq!(field(unknown).as_deref(), Some("remote.auth"));
        let _ = std::fs::remove_dir_all(&d);
    }
}
