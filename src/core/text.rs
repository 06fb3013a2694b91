//! Text without the formatting machinery (`format!` would bring float formatting into the wasm): joined
//! pieces, numbers as JavaScript writes them, and the ids of messages and sessions.

/// Makes message ids and session ids. Ids only need to be unique per connection; a random prefix keeps two
/// connections (or a reloaded page) from colliding.
#[derive(Clone, Debug)]
pub struct IdGen {
    prefix: String,
    next: u64,
}

impl IdGen {
    pub fn new(prefix: impl Into<String>) -> Self {
        IdGen {
            prefix: prefix.into(),
            next: 0,
        }
    }

    pub fn next_id(&mut self) -> String {
        self.next += 1;
        let mut s = String::with_capacity(self.prefix.len() + 8);
        s.push_str(&self.prefix);
        push_u64(&mut s, self.next);
        s
    }
}

/// Appends a number without the formatting machinery (keeps the wasm small).
pub fn push_u64(s: &mut String, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &b in &buf[i..] {
        s.push(b as char);
    }
}

/// Joins pieces of text. Used instead of `format!` so the wasm build carries no formatting machinery.
pub fn text(parts: &[&str]) -> String {
    let mut s = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for p in parts {
        s.push_str(p);
    }
    s
}

/// Writes a number the way JavaScript would for the values schemas use: integers exactly, other values
/// with up to six decimals. (No float formatting machinery in the wasm build.)
pub fn number(n: f64) -> String {
    let mut s = String::new();
    if !n.is_finite() {
        s.push_str(if n.is_nan() {
            "NaN"
        } else if n > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        });
        return s;
    }
    if n < 0.0 {
        s.push('-');
    }
    let a = n.abs();
    if a >= 1e18 {
        s.push_str("a very large number");
        return s;
    }
    let scaled = (a * 1e6).round() as u64;
    push_u64(&mut s, scaled / 1_000_000);
    let mut frac = scaled % 1_000_000;
    if frac != 0 {
        s.push('.');
        let mut digits = [b'0'; 6];
        for d in digits.iter_mut().rev() {
            *d = b'0' + (frac % 10) as u8;
            frac /= 10;
        }
        let end = digits.iter().rposition(|&d| d != b'0').map_or(0, |i| i + 1);
        for &d in &digits[..end] {
            s.push(d as char);
        }
    }
    s
}
