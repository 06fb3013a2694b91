//! Finding `<link rel="abp-manifest" href="…">` in the first bytes of a page.
//!
//! A small tokenizer after the HTML standard's, for the part of a document before `<body>`: comments,
//! doctypes and processing instructions are skipped, the contents of raw-text elements (`<script>`, `<style>`,
//! `<title>`, …) are skipped up to their end tag (so a `</head>` or a `<link>` inside a script string does
//! not count), attributes may come in any order, quoted with `"` or `'` or unquoted, names are
//! case-insensitive, the first of two same-named attributes wins, `rel` is a list of tokens, and character
//! references in the `href` are decoded. It stops at `</head>` or `<body>`. It works on bytes, so input that
//! is not UTF-8 is fine; it never panics and never looks past the end of what it was given.

/// What a scan of the page's first bytes found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkScan {
    /// The first `rel="abp-manifest"` link with an `href`: the raw (decoded, not yet resolved) `href`.
    Found(String),
    /// The `<head>` ended (`</head>` or `<body>`) without one.
    HeadEnded,
    /// The bytes ended before the head did: more of the page could still hold the link.
    Incomplete,
}

/// The link relation that names an ABP manifest.
pub const MANIFEST_REL: &str = "abp-manifest";

/// Elements whose content is text up to their end tag, not markup.
const RAW_TEXT: [&[u8]; 8] = [
    b"script",
    b"style",
    b"title",
    b"textarea",
    b"xmp",
    b"iframe",
    b"noembed",
    b"noframes",
];

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0c)
}

/// Position of `needle` (ASCII, compared case-insensitively) in `hay` at or after `from`.
fn find_ci(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || from >= hay.len() || hay.len() - from < needle.len() {
        return None;
    }
    (from..=hay.len() - needle.len())
        .find(|&i| hay[i..i + needle.len()].eq_ignore_ascii_case(needle))
}

/// True if some case-insensitive `needle` occurs in `hay`.
pub(crate) fn contains_ci(hay: &[u8], needle: &[u8]) -> bool {
    find_ci(hay, 0, needle).is_some()
}

/// Scans `html` (the first bytes of a page) for the manifest link.
pub fn find_manifest_link(html: &[u8]) -> LinkScan {
    let n = html.len();
    let mut i = 0;
    while i < n {
        let Some(lt) = html[i..].iter().position(|&b| b == b'<').map(|p| p + i) else {
            return LinkScan::Incomplete;
        };
        let rest = &html[lt..];
        if rest.starts_with(b"<!--") {
            // `<!-->` and `<!--->` are (empty) comments too, so look for `-->` from just after `<!`.
            match find_ci(html, lt + 2, b"-->") {
                Some(end) => i = end + 3,
                None => return LinkScan::Incomplete,
            }
        } else if rest.starts_with(b"<!") || rest.starts_with(b"<?") {
            match html[lt..].iter().position(|&b| b == b'>') {
                Some(end) => i = lt + end + 1,
                None => return LinkScan::Incomplete,
            }
        } else if rest.starts_with(b"</") {
            let (name, after) = tag_name(html, lt + 2);
            if after >= n {
                return LinkScan::Incomplete;
            }
            if name.eq_ignore_ascii_case(b"head") {
                return LinkScan::HeadEnded;
            }
            match html[after..].iter().position(|&b| b == b'>') {
                Some(end) => i = after + end + 1,
                None => return LinkScan::Incomplete,
            }
        } else if rest.len() > 1 && rest[1].is_ascii_alphabetic() {
            let (name, after) = tag_name(html, lt + 1);
            let Some((attrs, end)) = attributes(html, after) else {
                return LinkScan::Incomplete;
            };
            if name.eq_ignore_ascii_case(b"body") {
                return LinkScan::HeadEnded;
            }
            if name.eq_ignore_ascii_case(b"link") {
                if let Some(href) = manifest_href(&attrs) {
                    return LinkScan::Found(href);
                }
            }
            i = end;
            if let Some(raw) = RAW_TEXT.iter().find(|r| name.eq_ignore_ascii_case(r)) {
                match raw_text_end(html, i, raw) {
                    Some(e) => i = e,
                    None => return LinkScan::Incomplete,
                }
            }
        } else if rest.len() == 1 {
            return LinkScan::Incomplete;
        } else {
            i = lt + 1; // a `<` that starts no tag is text
        }
    }
    LinkScan::Incomplete
}

/// The tag name starting at `from`, and where it ends.
fn tag_name(html: &[u8], from: usize) -> (&[u8], usize) {
    let end = html[from.min(html.len())..]
        .iter()
        .position(|&b| is_space(b) || b == b'/' || b == b'>')
        .map_or(html.len(), |p| p + from);
    (&html[from.min(end)..end], end)
}

/// Where the content of a raw-text element `name` that starts at `from` ends (just past its end tag).
fn raw_text_end(html: &[u8], from: usize, name: &[u8]) -> Option<usize> {
    let mut at = from;
    loop {
        let lt = find_ci(html, at, b"</")?;
        let name_end = lt + 2 + name.len();
        if name_end >= html.len() {
            return None;
        }
        if html[lt + 2..name_end].eq_ignore_ascii_case(name)
            && (is_space(html[name_end]) || html[name_end] == b'/' || html[name_end] == b'>')
        {
            let close = html[name_end..].iter().position(|&b| b == b'>')?;
            return Some(name_end + close + 1);
        }
        at = lt + 2;
    }
}

type Attrs<'a> = Vec<(&'a [u8], &'a [u8])>;

/// The attributes of a start tag from `from` to its `>`: (lowercased-comparable name, raw value) pairs, and the
/// position after the `>`. `None` if the tag does not end within `html`.
fn attributes(html: &[u8], mut i: usize) -> Option<(Attrs<'_>, usize)> {
    let n = html.len();
    let mut attrs: Attrs<'_> = Vec::new();
    loop {
        while i < n && (is_space(html[i]) || html[i] == b'/') {
            i += 1;
        }
        if i >= n {
            return None;
        }
        if html[i] == b'>' {
            return Some((attrs, i + 1));
        }
        // A name runs to a space, `/`, `>` or `=` (a leading `=` belongs to the name, as in the standard).
        let start = i;
        i += 1;
        while i < n && !is_space(html[i]) && !matches!(html[i], b'/' | b'>' | b'=') {
            i += 1;
        }
        let name = &html[start..i];
        while i < n && is_space(html[i]) {
            i += 1;
        }
        let mut value: &[u8] = b"";
        if i < n && html[i] == b'=' {
            i += 1;
            while i < n && is_space(html[i]) {
                i += 1;
            }
            if i >= n {
                return None;
            }
            match html[i] {
                q @ (b'"' | b'\'') => {
                    let close = html[i + 1..].iter().position(|&b| b == q)?;
                    value = &html[i + 1..i + 1 + close];
                    i += close + 2;
                }
                _ => {
                    let s = i;
                    while i < n && !is_space(html[i]) && html[i] != b'>' {
                        i += 1;
                    }
                    value = &html[s..i];
                }
            }
        }
        if !attrs.iter().any(|(k, _)| k.eq_ignore_ascii_case(name)) {
            attrs.push((name, value));
        }
    }
}

fn attr<'a>(attrs: &Attrs<'a>, name: &[u8]) -> Option<&'a [u8]> {
    attrs
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| *v)
}

/// The `href` of a link whose `rel` has the token `abp-manifest`, if this is one.
fn manifest_href(attrs: &Attrs<'_>) -> Option<String> {
    let rel = attr(attrs, b"rel")?;
    let is_manifest = rel
        .split(|&b| is_space(b))
        .any(|token| token.eq_ignore_ascii_case(MANIFEST_REL.as_bytes()));
    if !is_manifest {
        return None;
    }
    attr(attrs, b"href").map(decode_references)
}

/// Decodes the character references a URL in an attribute may carry: `&amp;` and the other XML ones, and
/// numeric ones. Unknown references stay as written; bytes that are not UTF-8 become U+FFFD.
fn decode_references(raw: &[u8]) -> String {
    let s = String::from_utf8_lossy(raw);
    if !s.contains('&') {
        return s.into_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest: &str = &s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let end = rest[1..]
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '#')
            .map_or(rest.len(), |e| e + 1);
        let name = &rest[1..end];
        let decoded = match name {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => name.strip_prefix('#').and_then(|num| {
                let code = match num.strip_prefix(['x', 'X']) {
                    Some(hex) if !hex.is_empty() && hex.len() <= 6 => {
                        u32::from_str_radix(hex, 16).ok()
                    }
                    None if !num.is_empty() && num.len() <= 7 => num.parse::<u32>().ok(),
                    _ => None,
                };
                code.map(|c| {
                    char::from_u32(c)
                        .filter(|&c| c != '\0')
                        .unwrap_or('\u{fffd}')
                })
            }),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                let consumed = if rest[end..].starts_with(';') {
                    end + 1
                } else {
                    end
                };
                rest = &rest[consumed..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(html: &str) -> LinkScan {
        find_manifest_link(html.as_bytes())
    }

    fn href(s: &str) -> LinkScan {
        LinkScan::Found(s.to_owned())
    }

    #[test]
    fn finds_the_link_whatever_the_attribute_order_and_quoting() {
        for (html, want) in [
            (
                r#"<head><link rel="abp-manifest" href="/abp.json"></head>"#,
                "/abp.json",
            ),
            (
                r#"<head><link href="/abp.json" rel="abp-manifest"></head>"#,
                "/abp.json",
            ),
            (
                "<head><link href='/a.json' rel='abp-manifest'/></head>",
                "/a.json",
            ),
            (
                "<head><link rel=abp-manifest href=/u.json></head>",
                "/u.json",
            ),
            (
                "<head><LINK REL=\"ABP-Manifest\" HREF=\"/c.json\"></head>",
                "/c.json",
            ),
            (
                r#"<link rel="preload abp-manifest" href="m.json">"#,
                "m.json",
            ),
            (
                "<link rel=\"\tstylesheet\n abp-manifest \" href=\"t.json\">",
                "t.json",
            ),
            (
                r#"<link  rel = "abp-manifest"  href = "sp.json" >"#,
                "sp.json",
            ),
            (
                r#"<link rel="abp-manifest" href="/m.json?a=1&amp;b=2&#x26;c&#38;d">"#,
                "/m.json?a=1&b=2&c&d",
            ),
            (
                r#"<link rel="abp-manifest" href="/x&unknown;y">"#,
                "/x&unknown;y",
            ),
            (
                r#"<link rel="abp-manifest" href="first.json" href="second.json">"#,
                "first.json",
            ),
            (
                r#"<link rel="abp-manifest" rel="stylesheet" href="r.json">"#,
                "r.json",
            ),
            (
                r#"<link rel="abp-manifest"><link rel="abp-manifest" href="2.json">"#,
                "2.json",
            ),
            (r#"<link rel="abp-manifest" href="">"#, ""),
        ] {
            assert_eq!(found(html), href(want), "{html}");
        }
    }

    #[test]
    fn takes_the_first_link() {
        let html = r#"<head><link rel="stylesheet" href="s.css"><link rel="abp-manifest" href="one.json"><link rel="abp-manifest" href="two.json">"#;
        assert_eq!(found(html), href("one.json"));
    }

    #[test]
    fn ignores_lookalikes() {
        for html in [
            r#"<head><link rel="abp-manifest-v2" href="no.json"></head>"#,
            r#"<head><link rel="manifest" href="no.json"></head>"#,
            r#"<head><meta rel="abp-manifest" href="no.json"></head>"#,
            r#"<head><linkx rel="abp-manifest" href="no.json"></head>"#,
            r#"<head><!-- <link rel="abp-manifest" href="no.json"> --></head>"#,
            r#"<head><script>document.write('<link rel="abp-manifest" href="no.json">')</script></head>"#,
            r#"<head><style>/* <link rel="abp-manifest" href="no.json"> */</style></head>"#,
            r#"<head><title><link rel="abp-manifest" href="no.json"></title></head>"#,
            r#"<head><link data-rel="abp-manifest" href="no.json"></head>"#,
        ] {
            assert_eq!(found(html), LinkScan::HeadEnded, "{html}");
        }
    }

    #[test]
    fn stops_at_the_end_of_the_head() {
        assert_eq!(
            found(r#"<head></head><link rel="abp-manifest" href="late.json">"#),
            LinkScan::HeadEnded
        );
        assert_eq!(
            found(r#"<html><body><link rel="abp-manifest" href="late.json">"#),
            LinkScan::HeadEnded
        );
        assert_eq!(
            found(r#"<HEAD></HEAD ><link rel="abp-manifest" href="late.json">"#),
            LinkScan::HeadEnded
        );
        // `</head>` inside a script or comment does not end the head.
        assert_eq!(
            found(
                r#"<head><script>"</head>"</script><!-- </head> --><link rel="abp-manifest" href="ok.json">"#
            ),
            href("ok.json")
        );
        assert_eq!(
            found("<!doctype html><html lang=en><head><meta charset=utf-8></head>"),
            LinkScan::HeadEnded
        );
    }

    #[test]
    fn reports_incomplete_input() {
        for html in [
            "",
            "<",
            "<head>",
            "<head><link rel=\"abp-manifest\" href=\"/cut",
            "<head><link rel=\"abp-manifest\" href=\"/cut.json\"",
            "<head><script>let s = '</head>';",
            "<head><!-- </head>",
            "<head></hea",
            "<head><link rel=",
            "<!doctype",
        ] {
            assert_eq!(found(html), LinkScan::Incomplete, "{html:?}");
        }
    }

    #[test]
    fn works_on_bytes_that_are_not_utf8() {
        let mut html = b"<head><title>\xff\xfe caf\xe9</title><meta content=\"\xc3\x28\">".to_vec();
        html.extend_from_slice(b"<link rel=abp-manifest href=\"/m\xe9.json\"></head>");
        assert_eq!(find_manifest_link(&html), href("/m\u{fffd}.json"));
    }

    #[test]
    fn never_panics_on_garbage() {
        // Every prefix of a tricky document, and deterministic pseudo-random bytes biased towards markup.
        let doc = br#"<!DOCTYPE html><!--x--><?php ?><html><head a=b c='d' e="f" g><script src=x></script ><style></style><link rel="a abp-manifest" href="&#x1F600;&#0;&#99999999;&amp"></head>"#;
        for end in 0..=doc.len() {
            let _ = find_manifest_link(&doc[..end]);
        }
        assert_eq!(
            find_manifest_link(doc),
            href("\u{1F600}\u{fffd}&#99999999;&")
        );
        let alphabet = b"<>/!-='\" \tabcdeklnpr?&#;x\xff";
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..2000 {
            let len = (seed % 300) as usize;
            let mut input = Vec::with_capacity(len);
            for _ in 0..len {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                input.push(alphabet[(seed % alphabet.len() as u64) as usize]);
            }
            let _ = find_manifest_link(&input);
        }
    }

    #[test]
    fn decodes_references() {
        assert_eq!(decode_references(b"a&lt;b&gt;c&quot;&apos;"), "a<b>c\"'");
        assert_eq!(decode_references(b"&#65&#x42;&#;&#x;&"), "AB&#;&#x;&");
    }
}
