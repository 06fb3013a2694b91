//! A real `nats-server` (Debian's) on a free 127.0.0.1 port for the tests, configured the way docs/peer.md deploys
//! it (a user allowed `abp.>` only, TLS with a throwaway certificate authority that openssl makes here), or in one
//! of the other ways a login can be set up (a token, an nkey, operator JWTs and a `.creds` file, mutual TLS), or
//! open, to be refused. Killed when dropped.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::TempDir;

pub const USER: &str = "abp";
pub const PASSWORD: &str = "pw-Kx7q2Vd9";
pub const TOKEN: &str = "tok-Hq4mZ8w1";
/// What the user may publish and subscribe to: `abp.>` and nothing else.
const ALLOWED: &str = r#"permissions: { publish: ["abp.>"], subscribe: ["abp.>"] }"#;

pub struct Nats {
    child: Child,
    pub port: u16,
    config: PathBuf,
    url: String,
    tlsca: Option<PathBuf>,
    pub dir: TempDir,
}

/// Throwaway certificates (PEM): a CA, the server's for 127.0.0.1, and a client's for mutual TLS.
pub struct Certs {
    pub ca: PathBuf,
    pub server: (PathBuf, PathBuf),
    pub client: (PathBuf, PathBuf),
}

pub fn certificates(dir: &Path) -> Certs {
    let ssl = |args: &[&str]| {
        let status = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("openssl is not installed (npm test's setup installs it)");
        assert!(status.success(), "openssl {args:?}");
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    ssl(&[
        &["req", "-x509"],
        &ec[..],
        &[
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=abp test CA",
        ],
    ]
    .concat());
    for (name, ext) in [
        (
            "server",
            "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
        ),
        ("client", "extendedKeyUsage=clientAuth\n"),
    ] {
        std::fs::write(dir.join(format!("{name}.ext")), ext).expect("write");
        let (key, csr, pem, extfile) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.pem"),
            format!("{name}.ext"),
        );
        ssl(&[
            &["req"],
            &ec[..],
            &[
                "-keyout",
                &key,
                "-out",
                &csr,
                "-subj",
                &format!("/CN={name}"),
            ],
        ]
        .concat());
        ssl(&[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            &pem,
            "-days",
            "2",
            "-extfile",
            &extfile,
        ]);
    }
    Certs {
        ca: dir.join("ca.pem"),
        server: (dir.join("server.pem"), dir.join("server.key")),
        client: (dir.join("client.pem"), dir.join("client.key")),
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn users(user: &str) -> String {
    format!("authorization {{ users = [ {user} ] }}")
}

impl Nats {
    /// Locked as the docs deploy it: user and password (allowed `abp.>` only), TLS.
    pub fn start() -> Nats {
        Nats::tls(false).0
    }

    /// A user and password (allowed `abp.>` only), without TLS.
    pub fn plain() -> Nats {
        Nats::prefixed("abp")
    }

    /// A user and password allowed `<prefix>.>` only, without TLS.
    pub fn prefixed(prefix: &str) -> Nats {
        let allowed =
            format!(r#"permissions: {{ publish: ["{prefix}.>"], subscribe: ["{prefix}.>"] }}"#);
        let config = users(&format!(
            "{{ user: {USER}, password: {PASSWORD}, {allowed} }}"
        ));
        Nats::launch(
            TempDir::new(),
            &config,
            "nats",
            &format!("{USER}:{PASSWORD}@"),
            None,
        )
    }

    /// Anybody may connect.
    pub fn open() -> Nats {
        Nats::launch(TempDir::new(), "", "nats", "", None)
    }

    /// A token.
    pub fn token() -> Nats {
        let config = format!("authorization {{ token: {TOKEN} }}");
        Nats::launch(TempDir::new(), &config, "nats", &format!("{TOKEN}@"), None)
    }

    /// The nkey user `public` (allowed `abp.>` only); the URL carries no credentials.
    pub fn nkey(public: &str) -> Nats {
        let config = users(&format!("{{ nkey: {public}, {ALLOWED} }}"));
        Nats::launch(TempDir::new(), &config, "nats", "", None)
    }

    /// Operator mode: the accounts are the JWTs of `preload` (account public key, its JWT), signed by `operator`.
    pub fn operator(operator: &str, preload: (&str, &str)) -> Nats {
        let config = format!(
            "operator: {operator:?}\nresolver: MEMORY\nresolver_preload: {{ {}: {:?} }}",
            preload.0, preload.1
        );
        Nats::launch(TempDir::new(), &config, "nats", "", None)
    }

    /// Mutual TLS (`verify: true`) and a user and password; the client's certificate is in `certs`.
    pub fn mutual() -> (Nats, Certs) {
        Nats::tls(true)
    }

    /// A user and password (allowed `abp.>` only) over TLS; with `verify`, the server also requires a client
    /// certificate signed by the same CA.
    fn tls(verify: bool) -> (Nats, Certs) {
        let dir = TempDir::new();
        let certs = certificates(&dir.0);
        let verify = if verify {
            format!(", ca_file: {:?}, verify: true", certs.ca)
        } else {
            String::new()
        };
        let config = format!(
            "{}\ntls {{ cert_file: {:?}, key_file: {:?}{verify} }}",
            users(&format!(
                "{{ user: {USER}, password: {PASSWORD}, {ALLOWED} }}"
            )),
            certs.server.0,
            certs.server.1,
        );
        let login = format!("{USER}:{PASSWORD}@");
        let nats = Nats::launch(dir, &config, "tls", &login, Some(certs.ca.clone()));
        (nats, certs)
    }

    fn launch(dir: TempDir, body: &str, scheme: &str, login: &str, tlsca: Option<PathBuf>) -> Nats {
        let port = free_port();
        let config = dir.0.join("nats.conf");
        std::fs::write(&config, format!("listen: \"127.0.0.1:{port}\"\n{body}\n"))
            .expect("write the config");
        let child = spawn(&config, port);
        Nats {
            child,
            port,
            config,
            url: format!("{scheme}://{login}127.0.0.1:{port}"),
            tlsca,
            dir,
        }
    }

    /// `--nats URL` (credentials in it) and `--nats-tlsca`, as an abp-peer of this cluster is started.
    pub fn args(&self) -> Vec<String> {
        let mut args = vec!["--nats".to_owned(), self.url.clone()];
        if let Some(ca) = &self.tlsca {
            args.extend(["--nats-tlsca".to_owned(), ca.display().to_string()]);
        }
        args
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Kills the server (as if it crashed).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts it again on the same port, with the same configuration.
    pub fn restart(&mut self) {
        self.kill();
        self.child = spawn(&self.config, self.port);
    }
}

fn spawn(config: &Path, port: u16) -> Child {
    // Debian installs it in /usr/sbin, which not every PATH has.
    let bin = ["/usr/sbin/nats-server", "/usr/bin/nats-server"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("nats-server");
    let mut child = Command::new(bin)
        .arg("-c")
        .arg(config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nats-server is not installed (apt-get install nats-server; npm test's setup installs it)");
    let t0 = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "nats-server exited ({status}) with {}",
                std::fs::read_to_string(config).unwrap_or_default()
            );
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "nats-server did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

impl Drop for Nats {
    fn drop(&mut self) {
        self.kill();
    }
}
