//! SA file parsing: every accepted form and every error, each naming file, line, column and field.

use hipsec::safile::{Note, parse};
use ipsec::sa::Protocol;
use ipsec::{Mode, Spi};

const GCM_KEY: &str = "0x0102030405060708090a0b0c0d0e0f1011121314";

fn one(body: &str) -> String {
    format!("[[sa]]\n{body}")
}

fn err(text: &str) -> String {
    match parse("sa.toml", text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

fn gcm(extra: &str) -> String {
    one(&format!(
        "src = \"192.0.2.1\"\ndst = \"192.0.2.2\"\nproto = \"esp\"\nspi = \"0x00001000\"\nmode = \"tunnel\"\naead = \"aes128gcm\"\nkey = \"{GCM_KEY}\"\n{extra}"
    ))
}

#[test]
fn accepts_the_documented_example() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/sa-file.md"))
            .unwrap();
    // The example is the first ```toml block of the document.
    let start = text.find("```toml\n").unwrap() + 8;
    let end = start + text[start..].find("```").unwrap();
    let sas = parse("sa-file.md", &text[start..end]).unwrap();
    assert!(sas.len() >= 4, "{}", sas.len());
}

#[test]
fn gcm_tunnel() {
    let sas = parse("sa.toml", &gcm("esn = true\nreplay-window = 64\n")).unwrap();
    let p = &sas[0].params;
    assert_eq!(p.spi, Spi(0x1000));
    assert_eq!(p.mode, Mode::Tunnel);
    assert_eq!(p.protocol, Protocol::Esp("aes128gcm".parse().unwrap()));
    assert_eq!(p.enc_key.len(), 20);
    assert!(p.esn);
    assert_eq!(p.replay_window, 64);
    assert_eq!(sas[0].line, 1);
    assert!(sas[0].notes.is_empty());
}

#[test]
fn cbc_hmac_ah_lifetimes_and_integer_spi() {
    let text = format!(
        "{}\n[[sa]]\nsrc = \"2001:db8::1\"\ndst = \"2001:db8::2\"\nproto = \"ah\"\nspi = 4097\nmode = \"transport\"\nauth = \"sha256\"\nauth-key = \"0x{}\"\n[sa.lifetime.soft]\npackets = 10\n[sa.lifetime.hard]\nbytes = 1000\nseconds = 60\n",
        one(&format!(
            "src = \"192.0.2.1\"\ndst = \"192.0.2.2\"\nproto = \"esp\"\nspi = 0x2000\nmode = \"transport\"\nenc = \"aes256cbc\"\nauth = \"sha512\"\nenc-key = \"0x{}\"\nauth_key = \"{}\"",
            "11".repeat(32),
            "22".repeat(64)
        )),
        "33".repeat(32)
    );
    let sas = parse("sa.toml", &text).unwrap();
    assert_eq!(sas.len(), 2);
    assert_eq!(sas[0].params.protocol, Protocol::Esp("aes256cbc-sha512".parse().unwrap()));
    assert_eq!(sas[1].line, 11);
    assert_eq!(
        sas[1].params.protocol,
        Protocol::Ah(crypto::IntegAlg::Hmac(crypto::HmacAlg::Sha256_128))
    );
    assert_eq!(sas[1].params.soft.packets, Some(10));
    assert_eq!(sas[1].params.hard.bytes, Some(1000));
    assert_eq!(sas[1].params.hard.seconds, Some(60));
    assert_eq!(sas[0].params.replay_window, 128);
}

#[test]
fn legacy_and_insecure_notes() {
    let legacy = one(&format!(
        "src = \"192.0.2.1\"\ndst = \"192.0.2.2\"\nproto = \"esp\"\nspi = 300\nmode = \"tunnel\"\nenc = \"3des\"\nauth = \"sha1\"\nenc-key = \"{}\"\nauth-key = \"{}\"",
        "44".repeat(24),
        "55".repeat(20)
    ));
    let sas = parse("sa.toml", &legacy).unwrap();
    assert!(matches!(sas[0].notes.as_slice(), [Note::Legacy(_)]), "{:?}", sas[0].notes);
    let insecure = one(&format!(
        "src = \"192.0.2.1\"\ndst = \"192.0.2.2\"\nproto = \"esp\"\nspi = 300\nmode = \"tunnel\"\nenc = \"aes128cbc\"\nenc-key = \"{}\"",
        "44".repeat(16)
    ));
    let sas = parse("sa.toml", &insecure).unwrap();
    assert!(matches!(sas[0].notes.as_slice(), [Note::Insecure(_)]), "{:?}", sas[0].notes);
    assert!(sas[0].notes[0].to_string().contains("insecure"));
}

#[test]
fn reserved_spi_names_line_column_and_field() {
    let text = gcm("").replace("spi = \"0x00001000\"", "spi = \"0x00000010\"");
    assert_eq!(
        err(&text),
        "sa.toml:5:7: field \"spi\": spi 0x00000010 is reserved (must be > 255)"
    );
}

#[test]
fn unknown_field() {
    let e = err(&gcm("colour = \"blue\"\n"));
    assert!(e.starts_with("sa.toml:9:1: unknown field `colour`"), "{e}");
}

#[test]
fn missing_field() {
    let text = gcm("").replace("mode = \"tunnel\"\n", "");
    let e = err(&text);
    assert!(e.starts_with("sa.toml:1:1: missing field `mode`"), "{e}");
}

#[test]
fn bad_hex() {
    let e = err(&gcm("").replace(GCM_KEY, "0x01zz"));
    assert!(e.starts_with("sa.toml:8:7: field \"key\": not a hex key: 'z' at position 2"), "{e}");
    let e = err(&gcm("").replace(GCM_KEY, "0x012"));
    assert!(e.contains("odd number of hex digits"), "{e}");
}

#[test]
fn wrong_key_length_says_which_algorithm_wants_what() {
    let e = err(&gcm("").replace(GCM_KEY, "0x0102030405060708090a0b0c0d0e0f10"));
    assert_eq!(
        e,
        "sa.toml:8:7: field \"key\": aes128gcm needs a 20-byte key (cipher key + 4-byte salt), got 16 bytes"
    );
    let ah = one(&format!(
        "src = \"192.0.2.1\"\ndst = \"192.0.2.2\"\nproto = \"ah\"\nspi = 300\nmode = \"transport\"\nauth = \"gmac128\"\nauth-key = \"{}\"",
        "66".repeat(16)
    ));
    assert!(err(&ah).contains(
        "field \"auth-key\": gmac128 needs a 20-byte key (AES key + 4-byte salt), got 16"
    ));
}

#[test]
fn bad_address_and_mixed_versions() {
    let e = err(&gcm("").replace("\"192.0.2.1\"", "\"192.0.2.300\""));
    assert_eq!(e, "sa.toml:2:7: field \"src\": \"192.0.2.300\" is not an IP address");
    let e = err(&gcm("").replace("\"192.0.2.2\"", "\"2001:db8::2\""));
    assert_eq!(
        e,
        "sa.toml:3:7: field \"dst\": src 192.0.2.1 and dst 2001:db8::2 are of different IP versions"
    );
}

#[test]
fn aead_with_auth() {
    let e = err(&gcm("auth = \"sha256\"\n"));
    assert!(e.starts_with("sa.toml:9:8: field \"auth\": aes128gcm is a combined-mode"), "{e}");
}

#[test]
fn unknown_algorithm() {
    let e = err(&gcm("").replace("aes128gcm", "rot13"));
    assert!(e.starts_with("sa.toml:7:8: field \"aead\": unknown algorithm \"rot13\""), "{e}");
}

#[test]
fn bad_mode_and_proto() {
    let e = err(&gcm("").replace("\"tunnel\"", "\"beet\""));
    assert_eq!(
        e,
        "sa.toml:6:8: field \"mode\": \"beet\" is not a mode; use \"tunnel\" or \"transport\" \
         (or \"beet\" in a node config)"
    );
    let e = err(&gcm("").replace("\"esp\"", "\"ipcomp\""));
    assert_eq!(
        e,
        "sa.toml:4:9: field \"proto\": \"ipcomp\" is not a protocol; use \"esp\" or \"ah\""
    );
}

#[test]
fn duplicate_spi_and_proto() {
    let text = format!("{}\n{}", gcm(""), gcm(""));
    let e = err(&text);
    assert_eq!(
        e,
        "sa.toml:14:7: field \"spi\": spi 0x00001000 (esp) is already used by the SA at line 1"
    );
}

#[test]
fn bad_spi_and_window() {
    let e = err(&gcm("").replace("\"0x00001000\"", "\"0x1_0000_0000\""));
    assert!(e.starts_with("sa.toml:5:7: field \"spi\":"), "{e}");
    let e = err(&gcm("").replace("\"0x00001000\"", "-5"));
    assert!(e.contains("-5 is not an SPI"), "{e}");
    let e = err(&gcm("replay-window = 7\n"));
    assert_eq!(
        e,
        "sa.toml:9:17: field \"replay-window\": 7 is out of range (0 disables anti-replay, else 32..=65536)"
    );
}

#[test]
fn syntax_error_and_empty_file() {
    let e = err("[[sa]]\nsrc = \n");
    assert!(e.starts_with("sa.toml:2:"), "{e}");
    assert_eq!(err("# nothing\n"), "sa.toml: no [[sa]] entries");
    let e = err(&gcm("[sa.lifetime.soft]\nfortnights = 3\n"));
    assert!(e.starts_with("sa.toml:10:1: unknown field `fortnights`"), "{e}");
}

#[test]
fn esp_field_combinations() {
    let base =
        "src = \"192.0.2.1\"\ndst = \"192.0.2.2\"\nproto = \"esp\"\nspi = 300\nmode = \"tunnel\"\n";
    let e = err(&one(base));
    assert!(e.contains("field \"proto\": missing: esp needs \"aead\""), "{e}");
    let e = err(&one(&format!("{base}enc = \"null\"\n")));
    assert!(e.contains("field \"auth\": missing: null encryption needs \"auth\""), "{e}");
    let e = err(&one(&format!(
        "{base}enc = \"aes128cbc\"\nauth = \"sha256\"\nenc-key = \"{}\"\n",
        "00".repeat(16)
    )));
    assert!(e.contains("field \"auth-key\": missing"), "{e}");
    let e = err(&one(&format!("{base}enc = \"aes128gcm\"\n")));
    assert!(
        e.contains("field \"enc\": not used here: combined-mode ciphers go in \"aead\""),
        "{e}"
    );
    let e = err(&one(&format!("{base}aead = \"aes128gcm\"\n")));
    assert!(e.contains("field \"key\": missing"), "{e}");
    let ah =
        "src = \"192.0.2.1\"\ndst = \"192.0.2.2\"\nproto = \"ah\"\nspi = 300\nmode = \"tunnel\"\n";
    let e = err(&one(&format!("{ah}aead = \"aes128gcm\"\n")));
    assert!(e.contains("field \"aead\": not used here"), "{e}");
    let e = err(&one(ah));
    assert!(e.contains("field \"auth\": missing"), "{e}");
    let e = err(&one(&format!("{ah}auth = \"none\"\n")));
    assert!(e.contains("field \"auth\": unknown algorithm \"none\""), "{e}");
}

#[test]
fn node_fields_are_refused() {
    let e = err(&gcm("direction = \"out\"\n"));
    assert_eq!(
        e,
        "sa.toml:9:13: field \"direction\": not used here: \"direction\", \"name\", \"lane\" and \"peer\" are for the node config"
    );
    let e = err(&gcm("peer = \"192.0.2.2:4500\"\n"));
    assert!(e.starts_with("sa.toml:9:") && e.contains("field \"peer\": not used here"), "{e}");
    let e = err(&gcm("lane = 1
"));
    assert!(e.starts_with("sa.toml:9:") && e.contains("field \"lane\": not used here"), "{e}");
}
