//! Two copies of `abp-peer mcp` with one `--listen` port, started back to back as an MCP host's version probe
//! does (a short-lived copy that answers `server/discover` and is stopped, then the real one): the second waits
//! for the port instead of dying with "Address already in use", and a port that stays taken is still an error.

mod common;

use std::time::{Duration, Instant};

use common::{Peer, Started};

#[test]
fn the_real_copy_waits_for_the_port_the_probe_copy_is_giving_up() {
    let mut probe = Peer::start(&["mcp"]);
    let listen = probe.addr.to_string();
    let stop_probe = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(400));
        drop(probe.stdin.take()); // the host closes the probe's stdin: it exits
        assert!(
            probe.exited(Duration::from_secs(3)).is_some(),
            "the probe copy exits"
        );
    });
    let t0 = Instant::now();
    match Peer::try_start(&["mcp", "--listen", &listen], &[]) {
        Started::Up(real) => assert_eq!(real.addr.to_string(), listen),
        Started::Exited(status, stderr) => panic!("the real copy died ({status}): {stderr}"),
    }
    assert!(
        t0.elapsed() >= Duration::from_millis(300),
        "it did wait for the port"
    );
    stop_probe.join().expect("the probe copy stopped");
}

#[test]
fn a_port_that_stays_taken_is_an_error_that_names_it() {
    let first = Peer::start(&["mcp"]);
    let listen = first.addr.to_string();
    match Peer::try_start(&["mcp", "--listen", &listen], &[]) {
        Started::Up(_) => panic!("two copies listening on one port"),
        Started::Exited(status, stderr) => {
            assert!(!status.success());
            assert!(stderr.contains(&listen), "{stderr}");
        }
    }
    drop(first);
}
