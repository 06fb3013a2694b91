//! W3C Trace Context carried with a call: the `traceparent` and `tracestate` a caller puts in a request's
//! `_meta` (MCP's reserved keys, and ABP's `payload._meta`) reach the handler as they came, after they are
//! checked as the W3C recommendation says (<https://www.w3.org/TR/trace-context/>). What is not valid is
//! dropped, never passed on and never an error: a `traceparent` that does not parse drops the whole context
//! (a `tracestate` means nothing without it), a `tracestate` that does not parse drops only itself.

/// A call's trace context, checked: `traceparent` parses, and `tracestate`, when there is one, too.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    pub traceparent: String,
    pub tracestate: Option<String>,
}

/// The length of a version-00 `traceparent`: `vv-<32 hex>-<16 hex>-ff`.
const TRACEPARENT_LEN: usize = 55;

/// At most this many list members in a `tracestate`.
const MAX_MEMBERS: usize = 32;

impl Trace {
    /// The context a caller gave, when its `traceparent` is valid; its `tracestate` kept only when valid too.
    pub fn read(traceparent: Option<&str>, tracestate: Option<&str>) -> Option<Trace> {
        let traceparent = traceparent.filter(|t| valid_traceparent(t))?;
        Some(Trace {
            traceparent: traceparent.to_owned(),
            tracestate: tracestate
                .filter(|s| valid_tracestate(s))
                .map(str::to_owned),
        })
    }

    /// The 32 hex digits that name the trace.
    pub fn trace_id(&self) -> &str {
        &self.traceparent[3..35]
    }

    /// The 16 hex digits that name the caller's span, this call's parent.
    pub fn parent_id(&self) -> &str {
        &self.traceparent[36..52]
    }

    /// Whether the caller sampled the trace (the low bit of its flags).
    pub fn sampled(&self) -> bool {
        u8::from_str_radix(&self.traceparent[53..55], 16).is_ok_and(|f| f & 1 == 1)
    }

    /// The same trace with `span_id` (16 lowercase hex digits) as the parent a further hop sees, the flags and
    /// `tracestate` kept, written at version 00 (what this code speaks, whatever version it read).
    pub fn child(&self, span_id: &str) -> Trace {
        Trace {
            traceparent: [
                "00-",
                self.trace_id(),
                "-",
                span_id,
                "-",
                &self.traceparent[53..55],
            ]
            .concat(),
            tracestate: self.tracestate.clone(),
        }
    }
}

fn lower_hex(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn not_zero(s: &str) -> bool {
    s.bytes().any(|b| b != b'0')
}

/// `version-traceid-parentid-flags`, lowercase hex: version `ff` is invalid; version 00 is exactly 55
/// characters; a later version is at least that, and what follows the flags starts with `-`. Neither id is all
/// zeros.
fn valid_traceparent(t: &str) -> bool {
    let b = t.as_bytes();
    // ASCII first: the fields are cut by byte.
    if b.len() < TRACEPARENT_LEN || !b[..TRACEPARENT_LEN].is_ascii() {
        return false;
    }
    let (version, id, parent, flags) = (&t[0..2], &t[3..35], &t[36..52], &t[53..55]);
    let dashes = b[2] == b'-' && b[35] == b'-' && b[52] == b'-';
    let rest_ok = match version {
        "00" => b.len() == TRACEPARENT_LEN,
        "ff" => false,
        _ => b.len() == TRACEPARENT_LEN || b[TRACEPARENT_LEN] == b'-',
    };
    dashes
        && rest_ok
        && [version, id, parent, flags].iter().all(|s| lower_hex(s))
        && not_zero(id)
        && not_zero(parent)
}

/// A list of 1 to 32 `key=value` members separated by commas (blanks around each allowed, empty members
/// ignored), with no key twice. A key is `simple-key` or `tenant@system`; a value is up to 256 printable ASCII
/// characters without `,` or `=`, not ending in a space.
fn valid_tracestate(s: &str) -> bool {
    let mut keys: Vec<&str> = Vec::new();
    for member in s.split(',') {
        let member = member.trim_matches([' ', '\t']);
        if member.is_empty() {
            continue;
        }
        let Some((key, value)) = member.split_once('=') else {
            return false;
        };
        if !valid_key(key) || !valid_value(value) || keys.contains(&key) {
            return false;
        }
        keys.push(key);
    }
    (1..=MAX_MEMBERS).contains(&keys.len())
}

/// `lcalpha 0*255(lcalpha / DIGIT / "_" / "-" / "*" / "/")`, or `tenant@system`: a tenant of up to 241
/// characters starting with a letter or digit, a system of up to 14 starting with a letter.
fn valid_key(key: &str) -> bool {
    let rest = |s: &[u8]| {
        s.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"_-*/".contains(&c))
    };
    let b = key.as_bytes();
    match key.split_once('@') {
        None => b.len() <= 256 && b.first().is_some_and(u8::is_ascii_lowercase) && rest(&b[1..]),
        Some((tenant, system)) => {
            let (t, s) = (tenant.as_bytes(), system.as_bytes());
            t.len() <= 241
                && t.first()
                    .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                && rest(&t[1..])
                && s.len() <= 14
                && s.first().is_some_and(u8::is_ascii_lowercase)
                && rest(&s[1..])
        }
    }
}

/// Up to 256 characters of `%x20-2B / %x2D-3C / %x3E-7E`, the last not a space.
fn valid_value(value: &str) -> bool {
    let b = value.as_bytes();
    b.len() <= 256
        && b.last().is_some_and(|&c| c != b' ')
        && b.iter()
            .all(|&c| (0x20..=0x7e).contains(&c) && c != b',' && c != b'=')
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";

    fn read(t: &str) -> Option<Trace> {
        Trace::read(Some(t), None)
    }

    #[test]
    fn a_valid_traceparent_is_kept_as_it_came() {
        let trace = read(PARENT).expect("valid");
        assert_eq!(trace.traceparent, PARENT);
        assert_eq!(trace.trace_id(), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(trace.parent_id(), "00f067aa0ba902b7");
        assert!(trace.sampled());
        assert!(
            !read("00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-00")
                .expect("valid")
                .sampled()
        );
    }

    #[test]
    fn an_invalid_traceparent_drops_the_context() {
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7",
            "00-0AF7651916CD43DD8448EB211C80319C-00F067AA0BA902B7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01-",
            "00_0af7651916cd43dd8448eb211c80319c_00f067aa0ba902b7_01",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-0g",
            "01-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01x",
            "00-0af7651916cd43dd8448eb211c8031é-00f067aa0ba902b7-01",
        ] {
            assert_eq!(Trace::read(Some(bad), Some("a=b")), None, "{bad:?}");
        }
        assert_eq!(Trace::read(None, Some("a=b")), None);
    }

    #[test]
    fn a_later_version_is_read_by_its_first_fields() {
        let later = "cc-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01-what-comes-next";
        assert_eq!(read(later).expect("valid").traceparent, later);
        assert!(read(&later[..55]).is_some());
    }

    #[test]
    fn an_invalid_tracestate_is_dropped_alone() {
        let keep = |s: &str| {
            Trace::read(Some(PARENT), Some(s))
                .expect("parent")
                .tracestate
        };
        for good in [
            "rojo=00f067aa0ba902b7",
            "congo=t61rcWkgMzE, rojo=00f067aa0ba902b7",
            "a@b=1,,c-d/e*=x y",
        ] {
            assert_eq!(keep(good).as_deref(), Some(good), "{good:?}");
        }
        let many = (0..33)
            .map(|i| format!("k{i}=v"))
            .collect::<Vec<_>>()
            .join(",");
        for bad in [
            "",
            " , ",
            "Rojo=1",
            "rojo",
            "rojo=1,rojo=2",
            "a=b=c",
            "a=",
            "a=b\u{7f}",
            "1a=b",
            "a@B=1",
            &many,
        ] {
            assert_eq!(keep(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_child_names_the_next_parent_and_keeps_the_rest() {
        let trace = Trace::read(Some(PARENT), Some("rojo=1")).expect("valid");
        let child = trace.child("b7ad6b7169203331");
        assert_eq!(
            child.traceparent,
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        );
        assert_eq!(child.tracestate.as_deref(), Some("rojo=1"));
    }
}
