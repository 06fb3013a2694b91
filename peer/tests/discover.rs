//! `abp-peer discover URL` as a process, against the discovery fixture server (scripts/discovery-fixtures.mjs,
//! the same pages and manifests the browser tests use), started here with Node on 127.0.0.1 unless
//! `ABP_DISCOVERY_URL` names a running one. Covers: good, missing link, link after 50 KB, bad JSON (and JSON
//! nested 100,000 deep, and half a surrogate pair), wrong content type, missing fields, 101 capabilities, a
//! redirect loop (more than 5 redirects), 3 redirects (followed), a newer major version (warning), a manifest
//! over 1 MB, a slow server (timeout), a page whose body never ends (reading stops at `</head>`), https (the same
//! fixtures behind a TLS server with a throwaway CA that `SSL_CERT_FILE` names; refused without it), a refused
//! connection, and bad arguments.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The fixture server, shared by the tests of this binary. Statics are never dropped, so the server is started
/// with `--exit-with-stdin`: it exits when this process ends and the pipe to its stdin closes.
struct Fixtures {
    _child: Option<Child>,
    url: String,
}

fn fixtures() -> &'static Fixtures {
    static F: OnceLock<Fixtures> = OnceLock::new();
    F.get_or_init(|| {
        if let Ok(url) = std::env::var("ABP_DISCOVERY_URL") {
            return Fixtures { _child: None, url };
        }
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scripts/discovery-fixtures.mjs"
        );
        let mut child = Command::new("node")
            .arg(script)
            .arg("--exit-with-stdin")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the fixture server (node scripts/discovery-fixtures.mjs)");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the URL line");
        Fixtures {
            url: line.trim().to_owned(),
            _child: Some(child),
        }
    })
}

/// Runs `abp-peer discover` and returns (exit code, parsed stdout).
fn discover(args: &[&str]) -> (i32, Value, Duration) {
    let t0 = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_abp-peer"))
        .arg("discover")
        .args(args)
        .output()
        .expect("run abp-peer discover");
    let elapsed = t0.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), json, elapsed)
}

fn case(path: &str) -> (i32, Value) {
    let url = format!("{}{path}", fixtures().url);
    let (code, json, _) = discover(&[&url]);
    (code, json)
}

fn reason(v: &Value) -> &str {
    assert_eq!(v["supported"], false, "{v}");
    assert!(v.get("manifest").is_none(), "{v}");
    v["reason"].as_str().unwrap_or_default()
}

#[test]
fn good() {
    let (code, v) = case("/good/");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["supported"], true);
    assert_eq!(v["manifest"]["app"]["id"], "com.example.fixture");
    assert_eq!(v["manifest"]["capabilities"][1]["experimental"], true);
    assert_eq!(
        v["manifestUrl"],
        format!("{}/good/abp.json", fixtures().url),
        "the relative href is resolved against the page URL"
    );
    assert!(
        v.get("reason").is_none() && v.get("warnings").is_none(),
        "{v}"
    );
}

#[test]
fn missing_link() {
    let (code, v) = case("/missing-link/");
    assert_eq!(code, 1);
    assert!(
        reason(&v).contains("has no <link rel=\"abp-manifest\">"),
        "{v}"
    );
}

#[test]
fn link_after_50_kb() {
    let (code, v) = case("/late-link/");
    assert_eq!(code, 1);
    assert!(reason(&v).contains("first 50 KB"), "{v}");
}

#[test]
fn bad_json() {
    let (code, v) = case("/bad-json/");
    assert_eq!(code, 1);
    assert!(
        reason(&v).starts_with("the manifest is not valid JSON"),
        "{v}"
    );
    // Valid JSON nested 100,000 deep: refused with a reason, not a stack overflow.
    let (code, v) = case("/deep-json/");
    assert_eq!(code, 1);
    assert!(
        reason(&v).starts_with(
            "the manifest is not valid JSON: arrays and objects nest deeper than 128 levels"
        ),
        "{v}"
    );
    // Half a surrogate pair ("\ud800") is not valid JSON here, nor in the browser.
    let (code, v) = case("/surrogate-json/");
    assert_eq!(code, 1);
    assert!(
        reason(&v).starts_with("the manifest is not valid JSON"),
        "{v}"
    );
}

#[test]
fn wrong_content_type() {
    let (code, v) = case("/wrong-type/");
    assert_eq!(code, 1);
    assert_eq!(
        reason(&v),
        "the manifest was served as text/html, not application/json"
    );
}

#[test]
fn missing_fields() {
    let (code, v) = case("/missing-fields/");
    assert_eq!(code, 1);
    assert_eq!(reason(&v), "manifest field app.version is missing");
}

#[test]
fn too_many_capabilities() {
    let (code, v) = case("/too-many/");
    assert_eq!(code, 1);
    assert_eq!(
        reason(&v),
        "the manifest lists 101 capabilities; at most 100 are allowed"
    );
}

#[test]
fn redirect_loop() {
    let (code, v) = case("/redirect-loop/");
    assert_eq!(code, 1);
    assert!(
        reason(&v).starts_with("the manifest redirected more than 5 times"),
        "{v}"
    );
}

#[test]
fn redirects_are_followed() {
    let (code, v) = case("/redirects/");
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["manifestUrl"],
        format!("{}/good/abp.json", fixtures().url)
    );
}

#[test]
fn newer_major_version_warns() {
    let (code, v) = case("/newer-major/");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["manifest"]["abp"], "1.0");
    let warnings = v["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0]
            .as_str()
            .unwrap_or_default()
            .contains("newer major version"),
        "{v}"
    );
}

#[test]
fn manifest_over_1_mb() {
    let (code, v) = case("/big-manifest/");
    assert_eq!(code, 1);
    assert!(
        reason(&v).starts_with("the manifest is larger than 1 MB"),
        "{v}"
    );
}

#[test]
fn slow_server_times_out() {
    let url = format!("{}/slow/", fixtures().url);
    let (code, v, elapsed) = discover(&[&url, "--timeout", "300"]);
    assert_eq!(code, 1);
    assert!(
        reason(&v).starts_with("timed out after 300 ms while fetching the page"),
        "{v}"
    );
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
}

#[test]
fn reading_stops_at_the_end_of_the_head() {
    // The page's body never ends; discovery must not wait for it.
    let url = format!("{}/stalled/", fixtures().url);
    let (code, v, elapsed) = discover(&[&url, "--timeout", "5000"]);
    assert_eq!(code, 0, "{v}");
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
}

/// The fixtures over https: a TLS server on 127.0.0.1 that forwards each connection to the fixture server, with a
/// certificate for `localhost` and `127.0.0.1` from a CA made here. Returns its base URL and the CA's PEM file.
fn https_fixtures() -> &'static (String, std::path::PathBuf) {
    static F: OnceLock<(String, std::path::PathBuf)> = OnceLock::new();
    F.get_or_init(|| {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
        let ca_key = KeyPair::generate().expect("a CA key");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "abp-peer test CA");
        let ca_cert = ca.self_signed(&ca_key).expect("the CA certificate");
        let key = KeyPair::generate().expect("a key");
        let leaf = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .expect("params")
            .signed_by(&key, &Issuer::new(ca, ca_key))
            .expect("the certificate");
        let pem = std::env::temp_dir().join(format!("abp-peer-test-ca-{}.pem", std::process::id()));
        std::fs::write(&pem, ca_cert.pem()).expect("write the CA");
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone()],
                rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).expect("the key"),
            )
            .expect("the server config");
        let config = std::sync::Arc::new(config);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let upstream = fixtures()
            .url
            .strip_prefix("http://")
            .expect("an http fixture URL")
            .to_owned();
        std::thread::spawn(move || {
            for tcp in listener.incoming().map_while(Result::ok) {
                let (config, upstream) = (config.clone(), upstream.clone());
                std::thread::spawn(move || proxy(tcp, config, &upstream));
            }
        });
        (format!("https://localhost:{port}"), pem)
    })
}

/// One TLS connection, forwarded to the plain HTTP server at `upstream` (bytes both ways until either side ends).
fn proxy(tcp: std::net::TcpStream, config: std::sync::Arc<rustls::ServerConfig>, upstream: &str) {
    use std::io::{Read, Write};
    let Ok(conn) = rustls::ServerConnection::new(config) else {
        return;
    };
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let Ok(mut up) = std::net::TcpStream::connect(upstream) else {
        return;
    };
    let _ = tls.sock.set_read_timeout(Some(Duration::from_millis(20)));
    let _ = up.set_read_timeout(Some(Duration::from_millis(20)));
    let mut buf = [0u8; 16 * 1024];
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(20) {
        match tls.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if up.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
        match up.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if tls.write_all(&buf[..n]).and_then(|()| tls.flush()).is_err() {
                    return;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

/// `abp-peer discover` with `SSL_CERT_FILE` set to `ca` (or unset).
fn discover_with_ca(url: &str, ca: Option<&std::path::Path>) -> (i32, Value) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_abp-peer"));
    cmd.arg("discover").arg(url).env_remove("SSL_CERT_FILE");
    if let Some(ca) = ca {
        cmd.env("SSL_CERT_FILE", ca);
    }
    let out = cmd.output().expect("run abp-peer discover");
    let json =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), json)
}

#[test]
fn https_works() {
    let (base, ca) = https_fixtures();
    let (code, v) = discover_with_ca(&format!("{base}/good/"), Some(ca));
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["manifestUrl"], format!("{base}/good/abp.json"));
    assert_eq!(v["manifest"]["app"]["id"], "com.example.fixture");
    // Redirects over https are followed the same way.
    let (code, v) = discover_with_ca(&format!("{base}/redirects/"), Some(ca));
    assert_eq!(code, 0, "{v}");
    // A certificate nobody vouches for (the CA not given: Mozilla's roots only) is a reason, not a success.
    let (code, v) = discover_with_ca(&format!("{base}/good/"), None);
    assert_eq!(code, 1);
    let why = reason(&v);
    assert!(why.starts_with("could not fetch the page"), "{v}");
    assert!(
        why.to_ascii_lowercase().contains("certificate") || why.contains("UnknownIssuer"),
        "{v}"
    );
}

#[test]
fn unreachable_servers_are_reasons() {
    // A port nothing listens on (the fixture server's port + 0 is taken, so ask the OS for a free one).
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let (code, v, _) = discover(&[&format!("http://127.0.0.1:{free}/")]);
    assert_eq!(code, 1);
    assert!(reason(&v).starts_with("could not fetch the page"), "{v}");
    let (code, v, _) = discover(&[&format!("https://127.0.0.1:{free}/")]);
    assert_eq!(code, 1);
    assert!(reason(&v).starts_with("could not fetch the page"), "{v}");
    let (code, v, _) = discover(&["not a url"]);
    assert_eq!(code, 1);
    assert!(reason(&v).starts_with("invalid page URL"), "{v}");
}

#[test]
fn bad_arguments_exit_2() {
    assert_eq!(discover(&[]).0, 2);
    assert_eq!(discover(&["http://x/", "--timeout", "soon"]).0, 2);
    assert_eq!(discover(&["http://x/", "http://y/"]).0, 2);
}
