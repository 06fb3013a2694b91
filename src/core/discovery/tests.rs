//! The discovery rules, driven through [`Discovery`] the way a shell drives it, with scripted responses.

use serde_json::{json, Value};

use super::*;

// The core is generic over the payload; these tests parse and build with serde_json's `Value`.
type Discovery = super::Discovery<Value>;
type DiscoveryResult = super::DiscoveryResult<Value>;
type AbpManifest = super::AbpManifest<Value>;

const PAGE: &str = "https://app.example/tools/index.html";

fn good_manifest() -> Value {
    json!({
        "abp": "0.1",
        "app": { "id": "com.example.pdf", "name": "PDF maker", "version": "1.2.0",
                 "description": "Makes PDFs", "homepage": "https://app.example/", "icon": "/icon.png",
                 "support": { "email": "help@app.example" } },
        "capabilities": [
            { "name": "export.pdf", "description": "Render", "inputSchema": { "type": "object" },
              "experimental": true, "unknownField": 1 },
            { "name": "convert.docx", "deprecated": false, "outputSchema": true },
        ],
        "somethingElse": "ignored",
    })
}

fn head(status: u16, content_type: Option<&str>) -> ResponseHead<'_> {
    ResponseHead {
        status,
        content_type,
        ..ResponseHead::default()
    }
}

/// Drives a discovery to its end: `page` answers the page request, `manifest` the manifest request.
fn run(page: &[u8], manifest_ct: Option<&str>, manifest: &[u8]) -> DiscoveryResult {
    let mut d = Discovery::new(PAGE);
    assert_eq!(d.request().map(|r| r.resource), Some(Resource::Page));
    if d.on_response(head(200, Some("text/html"))) {
        for chunk in page.chunks(1000) {
            if !d.on_body(chunk) {
                break;
            }
        }
        d.on_end();
    }
    if let Some(req) = d.request() {
        assert_eq!(req.resource, Resource::Manifest);
        assert_eq!(req.max_bytes, MAX_MANIFEST_BYTES);
        if d.on_response(head(200, manifest_ct)) {
            for chunk in manifest.chunks(64 * 1024) {
                if !d.on_body(chunk) {
                    break;
                }
            }
            d.on_end();
        }
    }
    assert!(d.is_done());
    d.result()
}

fn page_with(href: &str) -> Vec<u8> {
    text(&[
        "<!doctype html><html><head><meta charset=utf-8><title>PDF</title><link rel=\"abp-manifest\" href=\"",
        href,
        "\"></head><body>hello</body></html>",
    ])
    .into_bytes()
}

fn reason(r: &DiscoveryResult) -> &str {
    assert!(!r.supported, "expected unsupported, got {r:?}");
    assert!(r.manifest.is_none());
    r.reason.as_deref().unwrap_or_default()
}

#[test]
fn a_good_page_and_manifest_are_supported() {
    let body = good_manifest().to_string();
    let r = run(
        &page_with("../abp.json"),
        Some("application/json; charset=utf-8"),
        body.as_bytes(),
    );
    assert!(r.supported, "{r:?}");
    assert_eq!(r.reason, None);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(
        r.manifest_url.as_deref(),
        Some("https://app.example/abp.json")
    );
    let m = r.manifest.as_ref().unwrap();
    assert_eq!(
        (
            m.app.id.as_str(),
            m.app.name.as_str(),
            m.app.version.as_str()
        ),
        ("com.example.pdf", "PDF maker", "1.2.0")
    );
    assert_eq!(m.capabilities.len(), 2);
    assert_eq!(m.capabilities[0].experimental, Some(true));
    // The typed result is written out in the documented shape: known fields only, camelCase, no nulls.
    let out = r.into_wire();
    assert_eq!(
        out,
        json!({
            "supported": true,
            "manifestUrl": "https://app.example/abp.json",
            "manifest": {
                "abp": "0.1",
                "app": { "id": "com.example.pdf", "name": "PDF maker", "version": "1.2.0",
                         "description": "Makes PDFs", "homepage": "https://app.example/", "icon": "/icon.png",
                         "support": { "email": "help@app.example" } },
                "capabilities": [
                    { "name": "export.pdf", "description": "Render", "inputSchema": { "type": "object" },
                      "experimental": true },
                    { "name": "convert.docx", "outputSchema": true, "deprecated": false },
                ],
            },
        })
    );
}

#[test]
fn a_page_without_the_link_is_not_supported() {
    let r = run(
        b"<html><head><title>x</title></head><body></body></html>",
        None,
        b"",
    );
    assert!(
        reason(&r).contains("has no <link rel=\"abp-manifest\">"),
        "{r:?}"
    );
    assert_eq!(r.manifest_url, None);
    // A page that ends without a head at all.
    let r = run(b"plain text", None, b"");
    assert!(reason(&r).contains("no <link"), "{r:?}");
}

#[test]
fn only_the_first_50_kb_are_read() {
    let mut page = b"<html><head><meta name=x content=\"".to_vec();
    page.extend(std::iter::repeat_n(b'a', 60 * 1024));
    page.extend_from_slice(b"\"><link rel=abp-manifest href=/abp.json></head>");
    let r = run(
        &page,
        Some("application/json"),
        good_manifest().to_string().as_bytes(),
    );
    assert!(reason(&r).contains("first 50 KB"), "{r:?}");

    // Just inside the limit still counts.
    let mut page = b"<html><head>".to_vec();
    page.extend(std::iter::repeat_n(b' ', MAX_PAGE_BYTES - 100));
    page.extend_from_slice(b"<link rel=abp-manifest href=/abp.json></head>");
    assert!(page.len() < MAX_PAGE_BYTES);
    let r = run(
        &page,
        Some("application/json"),
        good_manifest().to_string().as_bytes(),
    );
    assert!(r.supported, "{r:?}");
}

#[test]
fn reading_stops_at_the_end_of_the_head() {
    let mut d = Discovery::new(PAGE);
    assert!(d.on_response(head(200, Some("text/html"))));
    assert!(d.on_body(b"<html><head><title>t</title>"));
    assert!(
        !d.on_body(b"</head><body>"),
        "the head ended: no more bytes wanted"
    );
    d.on_end();
    assert!(reason(&d.result()).contains("<head> has no"));

    let mut d = Discovery::new(PAGE);
    assert!(d.on_response(head(200, Some("text/html"))));
    assert!(d.on_body(b"<head><link rel=abp-manifest href=/m.json>"));
    assert!(!d.on_body(
        b"<bo"[..]
            .iter()
            .chain(b"dy>")
            .copied()
            .collect::<Vec<_>>()
            .as_slice()
    ));
    d.on_end();
    assert_eq!(
        d.request().map(|r| r.url.as_str()),
        Some("https://app.example/m.json")
    );
}

#[test]
fn bad_json_is_not_supported() {
    for body in [
        &b"{\"abp\": \"0.1\","[..],
        b"",
        b"<html>",
        b"\xff\xfe{}",
        b"[1,2]",
        b"\"abp\"",
        b"null",
    ] {
        let r = run(&page_with("/abp.json"), Some("application/json"), body);
        let why = reason(&r);
        assert!(
            why.contains("not valid JSON") || why.contains("not a JSON object"),
            "{why}"
        );
        assert_eq!(
            r.manifest_url.as_deref(),
            Some("https://app.example/abp.json")
        );
    }
    // Nesting deeper than the parser allows is an error, not a stack overflow.
    let deep = "[".repeat(100_000);
    let r = run(
        &page_with("/abp.json"),
        Some("application/json"),
        deep.as_bytes(),
    );
    assert!(reason(&r).contains("not valid JSON"));
}

#[test]
fn the_manifest_must_be_served_as_json() {
    let body = good_manifest().to_string();
    for ct in [
        Some("text/html"),
        Some("text/plain; charset=utf-8"),
        None,
        Some("json"),
        Some(""),
    ] {
        let r = run(&page_with("/abp.json"), ct, body.as_bytes());
        let why = reason(&r);
        assert!(why.contains("application/json"), "{ct:?}: {why}");
    }
    for ct in [
        "application/json",
        "Application/JSON ; charset=UTF-8",
        "application/manifest+json",
        "text/json",
    ] {
        let r = run(&page_with("/abp.json"), Some(ct), body.as_bytes());
        assert!(r.supported, "{ct}: {r:?}");
    }
}

fn with(mut m: Value, path: &[&str], value: Option<Value>) -> Value {
    let mut at = &mut m;
    for key in &path[..path.len() - 1] {
        at = &mut at[*key];
    }
    let last = path[path.len() - 1];
    match value {
        Some(v) => at[last] = v,
        None => {
            if let Some(o) = at.as_object_mut() {
                o.remove(last);
            }
        }
    }
    m
}

fn check(m: &Value) -> Result<(AbpManifest, Vec<String>), String> {
    check_manifest(m.to_string().as_bytes())
}

#[test]
fn missing_or_wrong_required_fields_are_named() {
    let g = good_manifest();
    for (path, value, want) in [
        (&["abp"][..], None, "manifest field abp is missing"),
        (
            &["abp"],
            Some(json!(0.1)),
            "manifest field abp must be a version string",
        ),
        (
            &["abp"],
            Some(json!("zero")),
            "manifest field abp must be a version like \"0.1\"",
        ),
        (
            &["abp"],
            Some(json!("1")),
            "manifest field abp must be a version like",
        ),
        (&["app"], None, "manifest field app is missing"),
        (
            &["app"],
            Some(json!("x")),
            "manifest field app must be an object",
        ),
        (&["app", "id"], None, "manifest field app.id is missing"),
        (
            &["app", "id"],
            Some(json!(7)),
            "manifest field app.id must be a non-empty string",
        ),
        (
            &["app", "name"],
            Some(json!("  ")),
            "manifest field app.name must be a non-empty string",
        ),
        (
            &["app", "version"],
            None,
            "manifest field app.version is missing",
        ),
        (
            &["app", "version"],
            Some(Value::Null),
            "manifest field app.version is missing",
        ),
        (
            &["capabilities"],
            None,
            "manifest field capabilities is missing",
        ),
        (
            &["capabilities"],
            Some(json!({})),
            "manifest field capabilities must be an array",
        ),
        (
            &["capabilities"],
            Some(json!([{ "name": "a" }, 3])),
            "manifest field capabilities[1] must be an object",
        ),
        (
            &["capabilities"],
            Some(json!([{ "description": "no name" }])),
            "manifest field capabilities[0].name is missing",
        ),
        (
            &["capabilities"],
            Some(json!([{ "name": ["x"] }])),
            "manifest field capabilities[0].name must be a non-empty string",
        ),
    ] {
        let m = with(g.clone(), path, value);
        match check(&m) {
            Err(e) => assert!(e.starts_with(want), "{path:?}: {e}"),
            Ok(_) => panic!("{path:?} should be refused"),
        }
    }
    // Through the whole discovery too.
    let body = with(g, &["app", "version"], None).to_string();
    let r = run(
        &page_with("/abp.json"),
        Some("application/json"),
        body.as_bytes(),
    );
    assert_eq!(reason(&r), "manifest field app.version is missing");
}

#[test]
fn at_most_100_capabilities() {
    let caps = |n: usize| -> Value {
        Value::Array(
            (0..n)
                .map(|i| json!({ "name": text(&["cap.n", &i.to_string()]) }))
                .collect(),
        )
    };
    let ok = with(good_manifest(), &["capabilities"], Some(caps(100)));
    assert_eq!(check(&ok).map(|(m, _)| m.capabilities.len()), Ok(100));
    let too_many = with(good_manifest(), &["capabilities"], Some(caps(101)));
    assert_eq!(
        check(&too_many).map(|_| ()),
        Err("the manifest lists 101 capabilities; at most 100 are allowed".to_owned())
    );
}

#[test]
fn versions_compare_by_major() {
    assert_eq!(compare_versions("0.1", "0.1"), VersionCheck::Compatible);
    assert_eq!(compare_versions("0.1", "0.9"), VersionCheck::Compatible);
    assert_eq!(compare_versions("0.1", "0.1.7"), VersionCheck::Compatible);
    assert_eq!(compare_versions("0.1", "1.0"), VersionCheck::NewerMajor);
    assert_eq!(compare_versions("2.3", "1.9"), VersionCheck::OlderMajor);
    for bad in [
        "",
        "1",
        "1.",
        ".1",
        "a.b",
        "1.2.3.4",
        "1.-2",
        "99999999999.0",
        "1.2.x",
        " ",
    ] {
        assert_eq!(
            compare_versions("0.1", bad),
            VersionCheck::Invalid,
            "{bad:?}"
        );
    }
    let newer = with(good_manifest(), &["abp"], Some(json!("1.0")));
    let r = run(
        &page_with("/abp.json"),
        Some("application/json"),
        newer.to_string().as_bytes(),
    );
    assert!(r.supported, "{r:?}");
    assert_eq!(r.warnings.len(), 1);
    assert!(
        r.warnings[0].contains("newer major version"),
        "{:?}",
        r.warnings
    );
}

#[test]
fn optional_fields_of_the_wrong_type_are_left_out_with_a_warning() {
    let m = with(good_manifest(), &["app", "homepage"], Some(json!(42)));
    let m = with(
        m,
        &["capabilities"],
        Some(json!([
            { "name": "a", "inputSchema": "object", "experimental": "yes", "description": null },
            { "name": "a" },
        ])),
    );
    let (manifest, warnings) = check(&m).unwrap();
    assert_eq!(manifest.app.homepage, None);
    assert_eq!(manifest.capabilities[0].input_schema, None);
    assert_eq!(manifest.capabilities[0].experimental, None);
    assert_eq!(
        warnings,
        vec![
            "manifest field app.homepage is not a string; left out",
            "manifest field capabilities[0].inputSchema is not a JSON Schema object; left out",
            "manifest field capabilities[0].experimental is not a boolean; left out",
            "the manifest lists capability a more than once",
        ]
    );
}

#[test]
fn the_link_is_resolved_against_the_page_url_after_redirects() {
    let mut d = Discovery::new("http://start.example/a/b");
    let moved = ResponseHead {
        status: 200,
        url: Some("https://final.example/x/y/page"),
        content_type: Some("text/html"),
        location: None,
    };
    assert!(d.on_response(moved));
    d.on_body(&page_with("m.json?v=1#frag"));
    d.on_end();
    assert_eq!(
        d.request().map(|r| r.url.as_str()),
        Some("https://final.example/x/y/m.json?v=1")
    );
}

#[test]
fn redirects_are_followed_at_most_five_times() {
    // The shell reports 3xx with a Location; the core resolves it and asks for the next URL.
    let mut d = Discovery::new("http://a.example/");
    for i in 0..MAX_REDIRECTS {
        let loc = text(&["/hop", &i.to_string()]);
        assert!(!d.on_response(ResponseHead {
            status: 302,
            location: Some(&loc),
            ..ResponseHead::default()
        }));
        assert_eq!(
            d.request().map(|r| r.url.clone()),
            Some(text(&["http://a.example", &loc]))
        );
    }
    assert!(!d.on_response(ResponseHead {
        status: 301,
        location: Some("/again"),
        ..ResponseHead::default()
    }));
    assert!(d.request().is_none());
    assert!(reason(&d.result()).contains("redirected more than 5 times"));

    // Five redirects then a page is fine; the manifest's redirects are counted afresh.
    let mut d = Discovery::new("http://a.example/");
    for _ in 0..5 {
        d.on_response(ResponseHead {
            status: 307,
            location: Some("/p"),
            ..ResponseHead::default()
        });
    }
    assert!(d.on_response(head(200, Some("text/html"))));
    d.on_body(&page_with("abp.json"));
    d.on_end();
    assert_eq!(
        d.request().map(|r| r.url.as_str()),
        Some("http://a.example/abp.json")
    );
    for _ in 0..5 {
        d.on_response(ResponseHead {
            status: 308,
            location: Some("https://cdn.example/abp.json"),
            ..ResponseHead::default()
        });
    }
    assert!(d.on_response(head(200, Some("application/json"))));
    d.on_body(good_manifest().to_string().as_bytes());
    d.on_end();
    let r = d.result();
    assert!(r.supported, "{r:?}");
    assert_eq!(
        r.manifest_url.as_deref(),
        Some("https://cdn.example/abp.json")
    );
}

#[test]
fn https_never_leads_to_plain_http() {
    let r = run(
        &page_with("http://app.example/abp.json"),
        Some("application/json"),
        b"{}",
    );
    assert!(reason(&r).contains("from https to plain http"), "{r:?}");
    let mut d = Discovery::new("https://a.example/");
    d.on_response(ResponseHead {
        status: 302,
        location: Some("http://a.example/"),
        ..ResponseHead::default()
    });
    assert!(reason(&d.result()).contains("from https to plain http"));
}

#[test]
fn http_errors_and_odd_statuses_are_reasons() {
    let mut d = Discovery::new(PAGE);
    assert!(!d.on_response(head(404, Some("text/html"))));
    assert!(reason(&d.result()).contains("the page answered HTTP 404"));
    let mut d = Discovery::new(PAGE);
    d.on_response(head(302, None));
    assert!(reason(&d.result()).contains("302 without a Location"));
    // The manifest's status.
    let mut d = Discovery::new(PAGE);
    d.on_response(head(200, None));
    d.on_body(&page_with("/abp.json"));
    d.on_end();
    d.on_response(head(500, Some("application/json")));
    assert!(reason(&d.result()).contains("the manifest answered HTTP 500"));
}

#[test]
fn a_manifest_over_1_mb_is_refused_while_reading() {
    let mut d = Discovery::new(PAGE);
    d.on_response(head(200, None));
    d.on_body(&page_with("/abp.json"));
    d.on_end();
    assert!(d.on_response(head(200, Some("application/json"))));
    let chunk = vec![b' '; 256 * 1024];
    for _ in 0..4 {
        assert!(d.on_body(&chunk));
    }
    assert!(!d.on_body(b"{"), "one byte over 1 MB stops the read");
    d.on_end();
    assert!(reason(&d.result()).contains("larger than 1 MB"));
}

#[test]
fn failures_become_reasons() {
    let mut d = Discovery::new(PAGE);
    d.on_failure(Failure::Timeout(250.0));
    assert_eq!(
        reason(&d.result()),
        "timed out after 250 ms while fetching the page (https://app.example/tools/index.html)"
    );
    let mut d = Discovery::new(PAGE);
    d.on_response(head(200, None));
    d.on_body(&page_with("/abp.json"));
    d.on_end();
    d.on_failure(Failure::Network("connection refused".to_owned()));
    let r = d.result();
    assert!(reason(&r).starts_with(
        "could not fetch the manifest (https://app.example/abp.json): connection refused"
    ));
    let mut d = Discovery::new(PAGE);
    d.on_failure(Failure::Aborted("user left".to_owned()));
    assert_eq!(
        reason(&d.result()),
        "aborted while fetching the page: user left"
    );
}

#[test]
fn bad_page_urls_are_reasons_not_panics() {
    for url in [
        "",
        "app.example",
        "ftp://x/",
        "javascript:alert(1)",
        "http://",
        "http://u:p@x/",
        "\u{0}",
    ] {
        let d = Discovery::new(url);
        assert!(d.request().is_none(), "{url:?}");
        assert!(
            reason(&d.result()).starts_with("invalid page URL"),
            "{url:?}"
        );
    }
}

#[test]
fn out_of_order_calls_do_not_panic() {
    let mut d = Discovery::new(PAGE);
    assert!(!d.on_body(b"x"));
    d.on_end();
    assert!(d.request().is_some(), "still waiting for the page");
    d.on_failure(Failure::Network("x".to_owned()));
    d.on_failure(Failure::Network("y".to_owned()));
    assert!(!d.on_response(head(200, None)));
    d.on_end();
    assert!(reason(&d.result()).ends_with(": x"));
    assert!(reason(&Discovery::new(PAGE).result()).contains("did not finish"));
}

#[test]
fn garbage_pages_and_manifests_never_panic() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let alphabet = b"<>/!-=\"' abdefhklmnpr{}[]:,0123.\xff\xc3";
    for _ in 0..300 {
        let len = (next() % 2000) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
            .collect();
        let mut page = page_with("/abp.json");
        page.extend_from_slice(&bytes);
        let _ = run(&bytes, Some("application/json"), &bytes);
        let _ = run(&page, Some("application/json"), &bytes);
        let _ = check_manifest::<Value>(&bytes);
    }
    // A huge page (megabytes, in tiny chunks) is read only up to the limit.
    let mut d = Discovery::new(PAGE);
    d.on_response(head(200, None));
    let mut fed = 0;
    let chunk = [b'x'; 7];
    while d.on_body(&chunk) {
        fed += chunk.len();
        assert!(fed <= MAX_PAGE_BYTES + 7);
    }
    d.on_end();
    assert!(reason(&d.result()).contains("first 50 KB"));
}

#[test]
fn json_errors_give_a_position_and_nesting_is_measured_outside_strings() {
    let r = run(
        &page_with("/abp.json"),
        Some("application/json"),
        b"{\n  \"abp\": 0.1,,\n}",
    );
    assert_eq!(
        reason(&r),
        "the manifest is not valid JSON: syntax error at line 2, column 14"
    );
    let r = run(
        &page_with("/abp.json"),
        Some("application/json"),
        b"{\"abp\": [",
    );
    assert_eq!(
        reason(&r),
        "the manifest is not valid JSON: it ends too early at line 1, column 9"
    );
    assert_eq!(nesting_depth(b"{}"), 1);
    assert_eq!(nesting_depth(br#"{"a":[{"b":"[[[[\"{{"}]}"#), 3);
    assert_eq!(nesting_depth(b"]]]][[x"), 2);
    let deep = [b"[".repeat(129), b"]".repeat(129)].concat();
    let r = run(&page_with("/abp.json"), Some("application/json"), &deep);
    assert_eq!(
        reason(&r),
        "the manifest is not valid JSON: arrays and objects nest deeper than 128 levels"
    );
}

#[test]
fn a_shell_that_follows_redirects_cannot_leave_https_either() {
    // The browser follows redirects itself and reports where it ended.
    let mut d = Discovery::new("https://a.example/");
    let head = ResponseHead {
        status: 200,
        url: Some("http://a.example/"),
        content_type: Some("text/html"),
        location: None,
    };
    assert!(!d.on_response(head));
    assert!(reason(&d.result())
        .starts_with("the page leads from https to plain http (http://a.example/)"));
}
