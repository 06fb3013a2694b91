//! Who holds a relay room, over real sockets on 127.0.0.1: the app leaving keeps the agent (told with a binary
//! notice, and again when the next app joins), a room key keeps strangers out and lets its holder take the room
//! back, only the current holder's frames reach the other side, and a side that sends more than the other reads
//! is closed, not the reader.

use std::time::{Duration, Instant};

use tungstenite::Message;

mod common;
use common::{next_frame, upgrade, Peer, Socket};

const KEY: &str = "k3y-0f-th3-us3rs-4pp";

fn text(ws: &mut Socket) -> String {
    match next_frame(ws) {
        Some(Message::Text(t)) => t.as_str().to_owned(),
        other => panic!("expected a text frame, got {other:?}"),
    }
}

fn notice(ws: &mut Socket) -> String {
    match next_frame(ws) {
        Some(Message::Binary(b)) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("expected a binary notice, got {other:?}"),
    }
}

fn say(ws: &mut Socket, t: &str) {
    ws.send(Message::text(t)).expect("send");
}

fn status(p: &Peer, path: &str) -> u16 {
    upgrade(p.addr, &format!("127.0.0.1:{}", p.addr.port()), path, &[]).status
}

/// Whether `ws` is closed: a close, an error or EOF within `wait` (frames before it are read and dropped).
fn closed_within(ws: &mut Socket, wait: Duration) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < wait {
        match ws.read() {
            Ok(Message::Close(_)) => return true,
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return true,
        }
    }
    false
}

#[test]
fn the_app_leaving_keeps_the_agent_which_is_told_and_told_again_when_the_next_joins() {
    let p = Peer::start(&[]);
    let mut agent = p.connect("/relay/stay/agent");
    let mut app = p.connect("/relay/stay/app");
    say(&mut agent, "hello 1");
    assert_eq!(text(&mut app), "hello 1");
    app.close(None).expect("close");
    // The agent's connection stays, and it is told.
    assert_eq!(notice(&mut agent), "abp-relay: app left");
    // What the agent says before it knows is meant for the gone app's session: nobody gets it.
    say(&mut agent, "stale");
    std::thread::sleep(Duration::from_millis(100));
    let mut next_app = p.connect("/relay/stay/app");
    assert_eq!(notice(&mut agent), "abp-relay: app joined");
    say(&mut agent, "hello 2");
    assert_eq!(
        text(&mut next_app),
        "hello 2",
        "the stale frame was dropped"
    );
    say(&mut next_app, "hi");
    assert_eq!(text(&mut agent), "hi");
    // The agent leaving still closes the app (its session has nobody to talk to).
    drop(agent);
    assert!(closed_within(&mut next_app, Duration::from_secs(3)));
}

#[test]
fn a_room_key_keeps_others_out_and_lets_its_holder_take_the_room_back() {
    let p = Peer::start(&[]);
    let mut agent = p.connect("/relay/keyed/agent");
    let mut app = p.connect(&format!("/relay/keyed/app?key={KEY}"));
    say(&mut agent, "to the app");
    assert_eq!(text(&mut app), "to the app");
    // Another app, without the key or with another: 403 before the upgrade. Too short a key: 400.
    assert_eq!(status(&p, "/relay/keyed/app"), 403);
    assert_eq!(
        status(&p, "/relay/keyed/app?key=not-the-users-key-at-all"),
        403
    );
    assert_eq!(status(&p, "/relay/keyed/app?key=short"), 400);
    // The key's holder (the same page reloaded, before the old one is noticed gone) takes the room back.
    let mut reloaded = p.connect(&format!("/relay/keyed/app?key={KEY}"));
    assert!(
        closed_within(&mut app, Duration::from_secs(3)),
        "the replaced app is closed"
    );
    say(&mut agent, "to the reloaded app");
    assert_eq!(text(&mut reloaded), "to the reloaded app");
    say(&mut reloaded, "from the reloaded app");
    assert_eq!(text(&mut agent), "from the reloaded app");

    // The agent (it holds the token) can set the key before any app comes: then no app without it gets in.
    let token = format!("?token={}&key={KEY}", p.token);
    let (mut early, _) = tungstenite::connect(format!("{}/relay/early/agent{token}", p.url))
        .expect("the agent with a key");
    assert_eq!(status(&p, "/relay/early/app"), 403, "a squatter");
    let mut app = p.connect(&format!("/relay/early/app?key={KEY}"));
    say(&mut early, "only for the key's holder");
    assert_eq!(text(&mut app), "only for the key's holder");
}

#[test]
fn only_the_current_holders_frames_reach_the_other_side() {
    let p = Peer::start(&[]);
    // An app alone says something, then is replaced by the key's holder: what the first left waiting goes.
    let mut first = p.connect(&format!("/relay/only/app?key={KEY}"));
    say(&mut first, "from the replaced app");
    std::thread::sleep(Duration::from_millis(100));
    let mut second = p.connect(&format!("/relay/only/app?key={KEY}"));
    assert!(closed_within(&mut first, Duration::from_secs(3)));
    say(&mut second, "from the holder");
    let mut agent = p.connect("/relay/only/agent");
    assert_eq!(text(&mut agent), "from the holder");
    // A refused app's frames never arrive either.
    assert_eq!(status(&p, "/relay/only/app"), 403);
    say(&mut second, "still the holder");
    assert_eq!(text(&mut agent), "still the holder");
}

#[test]
fn a_side_that_sends_more_than_the_other_reads_is_closed_not_the_reader() {
    let p = Peer::start(&[]);
    let mut agent = p.connect("/relay/flood/agent");
    let mut app = p.connect("/relay/flood/app");
    // The agent reads nothing; the app sends 64 MiB.
    let chunk = "x".repeat(256 * 1024);
    let mut sender_closed = false;
    for _ in 0..256 {
        if app.send(Message::text(chunk.clone())).is_err() {
            sender_closed = true;
            break;
        }
    }
    sender_closed = sender_closed || closed_within(&mut app, Duration::from_secs(3));
    assert!(sender_closed, "the flooding side is closed");
    // The reader was not closed for it: it reads what was let through, then hears the app left.
    let mut frames = 0;
    loop {
        match next_frame(&mut agent).expect("the agent stays connected") {
            Message::Text(_) => frames += 1,
            Message::Binary(b) => {
                assert_eq!(&b[..], b"abp-relay: app left");
                break;
            }
            _ => unreachable!(),
        }
    }
    assert!(frames < 256, "{frames} frames of 256 were let through");
    say(&mut agent, "still here");
}
