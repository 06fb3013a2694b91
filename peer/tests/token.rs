//! The launch token that lasts, on real `abp-peer` processes: minted at the first start and kept in
//! `$XDG_STATE_HOME/abp-peer/token` (folder 0700, file 0600), the same after a restart (on the WebSocket endpoints
//! and on `abp-peer mcp --http`'s `/mcp`); `--new-token` replaces it and the old one is then a "wrong token" 401;
//! `ABP_PEER_TOKEN` wins and is never stored, and is an error with `--new-token`; a missing and a wrong token
//! are told apart on every endpoint that takes one; processes starting at once agree on one token; a malformed
//! token file, or one others can read, is refused with its name; each mode's start-up line lists only what it
//! serves. Every process here gets a state folder of its own, never the user's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

mod common;
use common::http::{answer, meta, modern_headers, request, Gateway};
use common::{upgrade, Peer, Started, TempDir};

const GIVEN: &str = "a-token-from-the-supervisor-0123456789";

/// Where the token of the state folder `state` is kept.
fn stored(state: &Path) -> PathBuf {
    state.join("abp-peer").join("token")
}

fn text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// `abp-peer ARGS` with `state` as its `XDG_STATE_HOME`, and `env` besides.
fn start(state: &Path, args: &[&str], env: &[(&str, &str)]) -> Started {
    let state = text(state);
    let mut all = vec![("XDG_STATE_HOME", state.as_str())];
    all.extend_from_slice(env);
    Peer::try_start(args, &all)
}

fn up(state: &Path, args: &[&str], env: &[(&str, &str)]) -> Peer {
    match start(state, args, env) {
        Started::Up(p) => p,
        Started::Exited(status, stderr) => panic!("abp-peer exited ({status}): {stderr}"),
    }
}

/// The exit status's code and stderr of a start that must fail.
fn refused(state: &Path, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    match start(state, args, env) {
        Started::Exited(status, stderr) => (status.code(), stderr),
        Started::Up(p) => panic!("started: {}", p.banner),
    }
}

/// The status and whole answer of an upgrade to `path` with `headers`.
fn try_path(p: &Peer, path: &str, headers: &[&str]) -> (u16, String) {
    let a = upgrade(
        p.addr,
        &format!("127.0.0.1:{}", p.addr.port()),
        path,
        headers,
    );
    (a.status, a.text)
}

/// `abp-peer mcp --http` with `state` as its `XDG_STATE_HOME` and no `ABP_PEER_TOKEN`: its stored token.
fn gateway(state: &Path) -> (Gateway, String) {
    let state = text(state);
    Gateway::start_with(
        &[],
        &[
            ("ABP_PEER_TOKEN", None),
            ("XDG_STATE_HOME", Some(state.as_str())),
        ],
    )
}

/// A `tools/list` to `/mcp` with `authorization` (a whole header line, or none): the status and the body.
fn list(g: &Gateway, authorization: Option<&str>) -> (u16, String) {
    let message =
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": { "_meta": meta() } });
    let mut headers: Vec<String> = modern_headers(&message, "application/json")
        .into_iter()
        .filter(|h| !h.starts_with("Authorization:"))
        .collect();
    headers.extend(authorization.map(str::to_owned));
    let (status, _, body) = answer(request(g, "POST", "/mcp", &headers, &message.to_string()));
    (status, body)
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

#[test]
fn the_token_is_kept_and_is_the_same_after_a_restart() {
    let state = TempDir::new();
    let file = stored(&state.0);
    let first = up(&state.0, &[], &[]);
    let token = first.token.clone();
    assert!(
        token.len() == 64 && token.bytes().all(|b| b.is_ascii_hexdigit()),
        "{}",
        first.banner
    );
    assert!(
        first
            .banner
            .contains(&format!("kept in {}", file.display()))
            && first.banner.contains("made at this start"),
        "says where it is kept: {}",
        first.banner
    );
    assert_eq!(
        std::fs::read_to_string(&file).expect("the stored token"),
        format!("{token}\n")
    );
    #[cfg(unix)]
    {
        assert_eq!(mode(&file), 0o600, "the file is the user's alone");
        assert_eq!(
            mode(file.parent().expect("a folder")),
            0o700,
            "the folder too"
        );
    }
    drop(first);
    let second = up(&state.0, &[], &[]);
    assert_eq!(second.token, token, "the same token after a restart");
    assert!(
        !second.banner.contains("made at this start"),
        "{}",
        second.banner
    );
    assert_eq!(
        try_path(&second, &format!("/control/k?token={token}"), &[]).0,
        101
    );
    // The per-process token file is another thing: it goes with its process, the stored token stays.
    drop(second);
    assert!(file.exists());

    // An MCP host configured with the token over HTTP still gets in after the gateway restarts.
    let bearer = format!("Authorization: Bearer {token}");
    for start in ["first", "restarted"] {
        let (g, log) = gateway(&state.0);
        assert!(
            log.contains(&format!("the token kept in {}", file.display())),
            "{log}"
        );
        assert!(
            !log.contains(&token),
            "not printed for the host's logs: {log}"
        );
        assert!(!log.contains("or set ABP_PEER_TOKEN"), "{log}");
        let (status, body) = list(&g, Some(&bearer));
        assert_eq!(status, 200, "{start}: {body}");
    }
}

#[test]
fn new_token_replaces_the_stored_one_and_the_old_one_is_a_wrong_token() {
    let state = TempDir::new();
    let file = stored(&state.0);
    let old = up(&state.0, &[], &[]).token.clone();
    let p = up(&state.0, &["--new-token"], &[]);
    assert_ne!(p.token, old);
    assert!(p.banner.contains("made at this start"), "{}", p.banner);
    assert_eq!(
        std::fs::read_to_string(&file).expect("the stored token"),
        format!("{}\n", p.token)
    );
    #[cfg(unix)]
    assert_eq!(mode(&file), 0o600);
    let (status, answer) = try_path(&p, &format!("/control/n?token={old}"), &[]);
    assert_eq!(status, 401, "{answer}");
    assert!(
        answer.contains("wrong token")
            && answer.contains("abp-peer/token in the state folder")
            && !answer.contains(&text(&file))
            && answer.contains("--new-token"),
        "{answer}"
    );
    let (status, _) = try_path(&p, "/control/n", &[&format!("Authorization: Bearer {old}")]);
    assert_eq!(status, 401);
    assert_eq!(
        try_path(&p, &format!("/control/n?token={}", p.token), &[]).0,
        101
    );
    let new = p.token.clone();
    drop(p);
    // And the new one is the one kept.
    assert_eq!(up(&state.0, &[], &[]).token, new);
    let (g, _) = gateway(&state.0);
    let (status, body) = list(&g, Some(&format!("Authorization: Bearer {old}")));
    assert_eq!(status, 401, "{body}");
    assert!(
        body.contains("wrong token") && !body.contains(&text(&file)),
        "{body}"
    );
    assert_eq!(
        list(&g, Some(&format!("Authorization: Bearer {new}"))).0,
        200
    );
}

#[test]
fn the_environment_wins_and_is_not_stored() {
    let state = TempDir::new();
    let file = stored(&state.0);
    let p = up(&state.0, &[], &[("ABP_PEER_TOKEN", GIVEN)]);
    assert!(
        p.token.is_empty() && !p.banner.contains(GIVEN),
        "{}",
        p.banner
    );
    assert!(
        p.banner.contains("token from ABP_PEER_TOKEN, not stored"),
        "{}",
        p.banner
    );
    assert!(!p.banner.contains("or set ABP_PEER_TOKEN"), "{}", p.banner);
    assert!(
        !state.0.join("abp-peer").exists(),
        "nothing is written to the state folder"
    );
    assert_eq!(
        try_path(&p, &format!("/control/e?token={GIVEN}"), &[]).0,
        101
    );
    drop(p);
    // Over a stored token too: the stored one is then refused, and left as it was.
    let kept = up(&state.0, &[], &[]).token.clone();
    let p = up(&state.0, &[], &[("ABP_PEER_TOKEN", GIVEN)]);
    let (status, answer) = try_path(&p, &format!("/control/e?token={kept}"), &[]);
    assert_eq!(status, 401);
    assert!(
        answer.contains("wrong token") && answer.contains("ABP_PEER_TOKEN"),
        "{answer}"
    );
    assert_eq!(
        try_path(&p, &format!("/control/e?token={GIVEN}"), &[]).0,
        101
    );
    drop(p);
    assert_eq!(
        std::fs::read_to_string(&file).expect("the stored token"),
        format!("{kept}\n")
    );
    // `--new-token` would store a token that ABP_PEER_TOKEN then hides: an error, and nothing changes.
    let (code, stderr) = refused(&state.0, &["--new-token"], &[("ABP_PEER_TOKEN", GIVEN)]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("--new-token") && stderr.contains("ABP_PEER_TOKEN"),
        "{stderr}"
    );
    assert!(!stderr.contains(GIVEN), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&file).expect("the stored token"),
        format!("{kept}\n")
    );
    // The gateway says where its token comes from, without the hint to set what is set.
    let (g, log) = Gateway::start_with(&[], &[("ABP_PEER_TOKEN", Some(GIVEN))]);
    assert!(log.contains("the token from ABP_PEER_TOKEN"), "{log}");
    assert!(!log.contains("or set") && !log.contains(GIVEN), "{log}");
    drop(g);
}

#[test]
fn a_missing_and_a_wrong_token_are_told_apart_on_every_endpoint() {
    let state = TempDir::new();
    let file = text(&stored(&state.0));
    let wrong = "0123456789abcdef".repeat(4);
    let check = |status: u16, answer: &str, missing: bool, what: &str| {
        assert_eq!(status, 401, "{what}: {answer}");
        if missing {
            assert!(
                answer.contains("no token: send Authorization: Bearer TOKEN"),
                "{what}: {answer}"
            );
        } else {
            assert!(
                answer.contains("wrong token") && answer.contains("--new-token"),
                "{what}: {answer}"
            );
        }
        // Where, without the path: the answer goes to whoever asked, and the path names the user's home.
        assert!(
            answer.contains("abp-peer/token in the state folder") && !answer.contains(&file),
            "{what} says where: {answer}"
        );
    };
    let mut p = up(&state.0, &["--allow-exit"], &[]);
    for path in ["/control", "/control/w", "/relay/w/agent", "/admin/exit"] {
        let (status, answer) = try_path(&p, path, &[]);
        check(status, &answer, true, path);
        let (status, answer) = try_path(&p, &format!("{path}?token={wrong}"), &[]);
        check(status, &answer, false, path);
        let (status, answer) = try_path(&p, path, &[&format!("Authorization: Bearer {wrong}")]);
        check(status, &answer, false, path);
    }
    assert!(p.exited(Duration::from_millis(100)).is_none());
    drop(p);
    let mcp = up(&state.0, &["mcp", "--room", "r"], &[]);
    let (status, answer) = try_path(&mcp, "/mcp-host/r", &[]);
    check(status, &answer, true, "/mcp-host");
    let (status, answer) = try_path(
        &mcp,
        "/mcp-host/r",
        &[&format!("Authorization: Bearer {wrong}")],
    );
    check(status, &answer, false, "/mcp-host");
    drop(mcp);
    let (g, _) = gateway(&state.0);
    let (status, body) = list(&g, None);
    check(status, &body, true, "/mcp");
    let (status, body) = list(&g, Some(&format!("Authorization: Bearer {wrong}")));
    check(status, &body, false, "/mcp");
}

#[test]
fn processes_started_at_once_agree_on_one_token() {
    for round in 0..4 {
        let state = TempDir::new();
        let barrier = std::sync::Barrier::new(4);
        let peers: Vec<Peer> = std::thread::scope(|s| {
            let started: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        up(&state.0, &[], &[])
                    })
                })
                .collect();
            started
                .into_iter()
                .map(|h| h.join().expect("started"))
                .collect()
        });
        let token = &peers[0].token;
        assert_eq!(token.len(), 64, "round {round}: {}", peers[0].banner);
        for p in &peers {
            assert_eq!(&p.token, token, "round {round}: {}", p.banner);
        }
        let made = peers
            .iter()
            .filter(|p| p.banner.contains("made at this start"))
            .count();
        assert_eq!(made, 1, "round {round}: one of them made it");
        assert_eq!(
            std::fs::read_to_string(stored(&state.0)).expect("the stored token"),
            format!("{token}\n")
        );
        // Nothing half-made is left beside it.
        let names: Vec<_> = std::fs::read_dir(state.0.join("abp-peer"))
            .expect("the folder")
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["token"], "round {round}");
    }
}

#[test]
fn a_malformed_token_file_is_refused_and_named() {
    let hex = "0123456789abcdef".repeat(4);
    let cases = [
        String::new(),
        "\n".to_owned(),
        "not a token\n".to_owned(),
        format!("{}\n", &hex[1..]),
        format!("{hex}0\n"),
        format!("{}g\n", &hex[1..]),
        format!(" {hex}\n"),
        format!("{hex}\n{hex}\n"),
        "x".repeat(100_000),
    ];
    for (i, content) in cases.iter().enumerate() {
        let state = TempDir::new();
        let file = stored(&state.0);
        // The first start makes the folder and the file as they should be; the content is then replaced.
        drop(up(&state.0, &[], &[]));
        std::fs::write(&file, content).expect("write");
        let (code, stderr) = refused(&state.0, &[], &[]);
        assert_eq!(code, Some(1), "case {i}: {stderr}");
        assert!(
            stderr.contains(&text(&file)) && stderr.contains("--new-token"),
            "case {i} names the file and the way out: {stderr}"
        );
        assert_eq!(
            &std::fs::read_to_string(&file).expect("still there"),
            content,
            "case {i}: not replaced silently"
        );
        // The mcp gateway refuses it the same way.
        let (code, _) = refused(&state.0, &["mcp"], &[]);
        assert_eq!(code, Some(1), "case {i}, mcp");
        if i == 0 {
            // `--new-token` is the way out.
            let p = up(&state.0, &["--new-token"], &[]);
            assert_eq!(
                std::fs::read_to_string(&file).expect("replaced"),
                format!("{}\n", p.token)
            );
        }
    }
    // Written by hand, as abp-peer would (any case of hex, a CRLF line end): taken.
    let state = TempDir::new();
    drop(up(&state.0, &[], &[]));
    let upper = hex.to_uppercase();
    std::fs::write(stored(&state.0), format!("{upper}\r\n")).expect("write");
    assert_eq!(up(&state.0, &[], &[]).token, upper);
}

#[cfg(unix)]
#[test]
fn a_token_file_or_folder_others_can_open_is_refused_not_mended() {
    let state = TempDir::new();
    let file = stored(&state.0);
    let token = up(&state.0, &[], &[]).token.clone();
    set_mode(&file, 0o644);
    let (code, stderr) = refused(&state.0, &[], &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&text(&file))
            && stderr.contains("644")
            && stderr.contains("--new-token")
            && stderr.contains("chmod 600"),
        "{stderr}"
    );
    assert_eq!(mode(&file), 0o644, "left as it was");
    // `chmod 600` takes it back as it is; `--new-token` replaces it with a private one.
    set_mode(&file, 0o600);
    assert_eq!(up(&state.0, &[], &[]).token, token);
    set_mode(&file, 0o640);
    let p = up(&state.0, &["--new-token"], &[]);
    assert_ne!(p.token, token);
    assert_eq!(mode(&file), 0o600);
    drop(p);
    // A folder others may enter or change: whoever changes it could put their own token there.
    let folder = file.parent().expect("a folder").to_owned();
    set_mode(&folder, 0o755);
    let (code, stderr) = refused(&state.0, &[], &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&text(&folder)) && stderr.contains("chmod 700"),
        "{stderr}"
    );
    set_mode(&folder, 0o700);
}

#[test]
fn each_mode_lists_only_the_endpoints_it_serves() {
    let state = TempDir::new();
    let plain = up(&state.0, &[], &[]);
    assert!(
        plain.banner.contains("/control and /relay/…/agent need it")
            && !plain.banner.contains("/admin/exit")
            && !plain.banner.contains("/mcp-host"),
        "{}",
        plain.banner
    );
    let exit = up(&state.0, &["--allow-exit"], &[]);
    assert!(
        exit.banner
            .contains("/control, /relay/…/agent and /admin/exit need it"),
        "{}",
        exit.banner
    );
    let mcp = up(&state.0, &["mcp"], &[]);
    assert!(
        mcp.banner.contains("/mcp-host needs it")
            && !mcp.banner.contains("/control")
            && !mcp.banner.contains("/relay")
            && !mcp.banner.contains("/admin/exit"),
        "{}",
        mcp.banner
    );
    assert!(
        mcp.token.is_empty() && !mcp.banner.contains(&plain.token),
        "the gateway does not print the token: {}",
        mcp.banner
    );
    assert!(
        mcp.banner
            .contains(&format!("kept in {}", stored(&state.0).display())),
        "{}",
        mcp.banner
    );
    let env = up(&state.0, &["mcp"], &[("ABP_PEER_TOKEN", GIVEN)]);
    assert!(
        env.banner.contains("/mcp-host needs it")
            && !env.banner.contains("/control")
            && !env.banner.contains("/admin/exit")
            && !env.banner.contains("or set"),
        "{}",
        env.banner
    );
}

#[test]
fn the_token_file_flag_cannot_be_the_stored_token() {
    let state = TempDir::new();
    let file = stored(&state.0);
    drop(up(&state.0, &[], &[]));
    let kept = std::fs::read_to_string(&file).expect("the stored token");
    for env in [&[][..], &[("ABP_PEER_TOKEN", GIVEN)][..]] {
        let (code, stderr) = refused(&state.0, &["--token-file", &text(&file)], env);
        assert_eq!(code, Some(1), "{stderr}");
        assert!(stderr.contains("--token-file"), "{stderr}");
        assert_eq!(std::fs::read_to_string(&file).expect("kept"), kept);
    }
}
