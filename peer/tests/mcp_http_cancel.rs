//! A POSTed `notifications/cancelled` at revision 2026-07-28 (`abp-peer mcp --http`, raw HTTP/1.1 on 127.0.0.1,
//! the native app joined). The revision's cancel is a closed stream, but bridges for stdio hosts (mcp-remote
//! among them) POST their host's notice and keep the stream open. The notice cancels the one request in flight
//! from the same sender with that id, and its stream then ends with no response; an id that names no request,
//! or more than one, is ignored, and another sender's notice cannot cancel.

use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;
mod native_app;
use common::http::*;
use native_app::{App, AppEvent};

/// The gateway (launch token off: each test names its sender by its own `Authorization`) and the app, joined.
async fn joined() -> (Gateway, App) {
    let (g, _) = Gateway::start(&["--http-no-auth"]);
    let mut app = App::join(&g.ws).await;
    assert!(matches!(
        app.next("the app's session").await,
        AppEvent::Joined
    ));
    (g, app)
}

/// A modern request's headers, sent as `bearer`.
fn headers_as(message: &Value, bearer: &str) -> Vec<String> {
    let mut h = modern_headers(message, "application/json, text/event-stream");
    h[0] = format!("Authorization: Bearer {bearer}");
    h
}

/// Starts a `slow` call with id `id` (with progress when `opened`, read until its SSE stream has opened), as
/// `bearer`: its connection and the app's call id.
async fn slow_call(
    g: &Gateway,
    app: &mut App,
    id: Value,
    bearer: &str,
    opened: bool,
) -> (TcpStream, String) {
    let mut meta = meta();
    meta["progressToken"] = json!("p");
    let slow = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": "slow", "arguments": { "progress": opened }, "_meta": meta } });
    let mut stream = request(
        g,
        "POST",
        "/mcp",
        &headers_as(&slow, bearer),
        &slow.to_string(),
    );
    let call_id = app.started_of("slow").await;
    if opened {
        read_through(&mut stream, "notifications/progress").await;
    }
    (stream, call_id)
}

/// POSTs `notifications/cancelled` for `id` as `bearer`: its status (202 whatever it matched).
async fn notice(g: &Gateway, id: Value, bearer: &str) -> u16 {
    let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": { "requestId": id, "reason": "the user pressed stop" } });
    blocking(|| post(g, &cancel, headers_as(&cancel, bearer)))
        .await
        .0
}

/// The rest of a request's answer, read to its end (the gateway closes: `Connection: close`).
async fn rest(mut stream: TcpStream) -> String {
    blocking(move || {
        let mut rest = String::new();
        let _ = stream.read_to_string(&mut rest);
        rest
    })
    .await
}

/// Whether the app's handlers saw no abort within `wait`.
async fn no_abort_within(app: &mut App, wait: Duration) -> Result<(), String> {
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        let next = tokio::time::timeout(
            deadline.saturating_duration_since(Instant::now()),
            app.next("an app event"),
        )
        .await;
        if let Ok(AppEvent::Aborted { call_id, .. }) = next {
            return Err(format!("call {call_id} was aborted"));
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_posted_cancel_notice_cancels_the_one_request_it_names() {
    let (g, mut app) = joined().await;
    listed(&g).await;

    // Once its stream has opened (progress written): the handler aborts, and the stream ends with no response.
    let (stream, call_id) = slow_call(&g, &mut app, json!(7), "alice", true).await;
    let sent = Instant::now();
    assert_eq!(notice(&g, json!(7), "alice").await, 202);
    let took = app.aborted_after(&call_id, sent).await;
    assert!(
        took < Duration::from_millis(500),
        "aborted {took:?} after the notice"
    );
    let rest = rest(stream).await;
    assert!(
        events(&rest).iter().all(|m| m.get("id").is_none()),
        "a response was written after the cancel: {rest}"
    );

    // Before anything was written for it (a string id): an SSE stream with nothing in it.
    let (stream, call_id) = slow_call(&g, &mut app, json!("call-1"), "alice", false).await;
    let sent = Instant::now();
    assert_eq!(notice(&g, json!("call-1"), "alice").await, 202);
    let took = app.aborted_after(&call_id, sent).await;
    assert!(
        took < Duration::from_millis(500),
        "aborted {took:?} after the notice"
    );
    let (status, head, body) = answer(stream);
    assert_eq!(status, 200, "{head}\n{body}");
    assert!(
        head.to_lowercase()
            .contains("content-type: text/event-stream")
            && events(&body).is_empty(),
        "{head}\n{body}"
    );
    app.leave();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_notice_that_names_no_request_or_more_than_one_or_another_s_is_ignored() {
    let (g, mut app) = joined().await;
    listed(&g).await;

    // Two requests of alice's that she numbered alike: a notice for that id cannot tell them apart.
    let (first, first_id) = slow_call(&g, &mut app, json!(9), "alice", true).await;
    let (second, second_id) = slow_call(&g, &mut app, json!(9), "alice", true).await;
    assert_eq!(notice(&g, json!(9), "alice").await, 202);
    // An id no request has, and the same id sent by someone else.
    assert_eq!(notice(&g, json!(10), "alice").await, 202);
    assert_eq!(notice(&g, json!(9), "mallory").await, 202);
    no_abort_within(&mut app, Duration::from_millis(500))
        .await
        .expect("no notice matched exactly one of the sender's requests");

    // Once one of them has ended (its stream closed), the id names one request again, and the notice cancels it.
    let closed = Instant::now();
    drop(first);
    app.aborted_after(&first_id, closed).await;
    let sent = Instant::now();
    assert_eq!(notice(&g, json!(9), "alice").await, 202);
    app.aborted_after(&second_id, sent).await;
    let rest = rest(second).await;
    assert!(
        events(&rest).iter().all(|m| m.get("id").is_none()),
        "a response was written after the cancel: {rest}"
    );
    app.leave();
}
