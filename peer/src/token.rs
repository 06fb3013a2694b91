//! The launch token, and where it is kept. A host configured with the token must keep working when the peer
//! restarts, so the token minted at the first start is kept in the user's state folder
//! (`$XDG_STATE_HOME/abp-peer/token`, else `~/.local/state/abp-peer/token`) and read again at every start after;
//! `--new-token` replaces it. `ABP_PEER_TOKEN` wins over the stored one and is never written there.
//!
//! The folder is the user's alone (0700) and so is the file (0600): a token file others can read is refused, not
//! mended, since someone may have read it already. Two processes starting at once must agree on one token, and
//! neither may read a file the other has only half written: the token is written to a file of its own in the
//! folder first and then linked to its name, which fails if another process linked its own first; that one is
//! then read.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use subtle::ConstantTimeEq;

/// The environment variable a supervisor sets to give the peer a token of its own choosing.
pub(crate) const TOKEN_ENV: &str = "ABP_PEER_TOKEN";

/// The stored token's file, in [`state_dir`].
pub(crate) const FILE_NAME: &str = "token";

/// The flag that replaces the stored token.
pub(crate) const NEW_TOKEN_FLAG: &str = "--new-token";

/// Where this process's token came from.
#[derive(Clone, Debug)]
pub(crate) enum Source {
    /// [`TOKEN_ENV`]: the supervisor's, already in its configuration, so never printed.
    Env,
    /// The user's state folder; `minted` when this start made it (the first start, or `--new-token`).
    Stored { path: PathBuf, minted: bool },
}

/// The launch secret: minted from the OS RNG (or taken from `ABP_PEER_TOKEN`), and where it came from.
#[derive(Clone)]
pub(crate) struct Token {
    secret: String,
    source: Source,
}

impl Token {
    /// The token of this start: `ABP_PEER_TOKEN` if set, else the stored one (minted and stored if there is
    /// none, or if `new`, which is an error together with `ABP_PEER_TOKEN`, since that would win).
    pub(crate) fn launch(new: bool) -> Result<Token, String> {
        if let Some(given) = std::env::var_os(TOKEN_ENV) {
            if new {
                return Err(format!(
                    "{NEW_TOKEN_FLAG} stores a new token, but {TOKEN_ENV} is set and would be used instead: unset \
                     {TOKEN_ENV} to use the stored token, or change {TOKEN_ENV} itself"
                ));
            }
            let given = given
                .into_string()
                .map_err(|_| format!("{TOKEN_ENV} is not valid UTF-8"))?;
            return Token::given(given);
        }
        let dir = state_dir()?;
        private_dir(&dir)?;
        let path = dir.join(FILE_NAME);
        if new {
            return replace(&dir, &path);
        }
        // The file may vanish between a failed link and the read (a user removing it): try again, a few times.
        for _ in 0..3 {
            if let Some(token) = read(&path)? {
                return Ok(token);
            }
            if let Some(token) = create(&dir, &path)? {
                return Ok(token);
            }
        }
        Err(format!(
            "cannot keep the launch token in {}: it keeps disappearing",
            path.display()
        ))
    }

    /// `ABP_PEER_TOKEN`'s value: at least 32 characters of `A-Z a-z 0-9 . _ ~ -`, so it travels in a URL
    /// unchanged, and not one a person typed.
    fn given(given: String) -> Result<Token, String> {
        let ok = given.len() >= 32
            && given
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'-'));
        if !ok {
            return Err(format!(
                "{TOKEN_ENV} must be at least 32 characters of A-Z a-z 0-9 . _ ~ - (or unset, to use the stored \
                 token)"
            ));
        }
        if !looks_random(&given) {
            return Err(format!(
                "{TOKEN_ENV} is too easy to guess (too few different characters, or a run of one): use a \
                 random one, such as `od -An -N32 -tx1 /dev/urandom | tr -d ' \\n'`, or unset it"
            ));
        }
        Ok(Token {
            secret: given,
            source: Source::Env,
        })
    }

    /// 32 bytes from the operating system's RNG, as 64 hex digits.
    fn random(path: &Path) -> Result<Token, String> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)
            .map_err(|e| format!("the OS random number generator failed: {e}"))?;
        Ok(Token {
            secret: hex(&bytes),
            source: Source::Stored {
                path: path.to_owned(),
                minted: true,
            },
        })
    }

    /// A token for the unit tests, as if stored at `path`.
    #[cfg(test)]
    pub(crate) fn stored_for_tests(secret: &str, path: &str) -> Token {
        Token {
            secret: secret.to_owned(),
            source: Source::Stored {
                path: PathBuf::from(path),
                minted: false,
            },
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.secret
    }

    pub(crate) fn source(&self) -> &Source {
        &self.source
    }

    /// Constant-time comparison (the length is not secret).
    pub(crate) fn matches(&self, candidate: &str) -> bool {
        bool::from(self.secret.as_bytes().ct_eq(candidate.as_bytes()))
    }

    /// Where a client finds this token, as a refusal tells it: the stored file, or the supervisor's variable.
    pub(crate) fn whereabouts(&self) -> String {
        match &self.source {
            Source::Env => format!("the value {TOKEN_ENV} had when abp-peer started"),
            // Not the path: this text goes to whoever asked, and the path names the user's home. The start-up
            // line, which only the user sees, names the file.
            Source::Stored { .. } => {
                "the token kept in abp-peer/token in the state folder of the user running it (the file its \
                 start-up line names)"
                    .to_owned()
            }
        }
    }

    /// Writes the token to `path` (`--token-file`, or the per-port file another copy of `abp-peer mcp` reads),
    /// readable and writable by this user only (mode 0600 on Unix). A file already there is replaced, never
    /// written through (it could be a link somewhere else).
    pub(crate) fn write_to(&self, path: &Path) -> Result<(), String> {
        let fail =
            |e: std::io::Error| format!("cannot write the token file {}: {e}", path.display());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.exists() {
                let mut builder = std::fs::DirBuilder::new();
                builder.recursive(true);
                #[cfg(unix)]
                std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
                builder.create(dir).map_err(fail)?;
            }
        }
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(fail(e)),
        }
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(path).map_err(fail)?;
        writeln!(file, "{}", self.secret).map_err(fail)
    }
}

/// A token a person did not type: at least 12 different characters, and no character eight times in a row
/// (32 zeros, `aaaa…`, `abcabc…` are refused; 32 random bytes in hex pass, but for about one in five million).
fn looks_random(token: &str) -> bool {
    let bytes = token.as_bytes();
    let mut seen = [false; 256];
    for &b in bytes {
        seen[usize::from(b)] = true;
    }
    let distinct = seen.iter().filter(|s| **s).count();
    let run = bytes.windows(8).any(|w| w.iter().all(|b| *b == w[0]));
    distinct >= 12 && !run
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `$XDG_STATE_HOME/abp-peer`, else `$HOME/.local/state/abp-peer`. A relative `XDG_STATE_HOME` is ignored, as
/// the XDG base directory rules say; with neither, there is nowhere to keep the token.
pub(crate) fn state_dir() -> Result<PathBuf, String> {
    let absolute = |k: &str| {
        std::env::var_os(k)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(dir) = absolute("XDG_STATE_HOME") {
        return Ok(dir.join("abp-peer"));
    }
    if let Some(home) = absolute("HOME") {
        return Ok(home.join(".local/state/abp-peer"));
    }
    Err(format!(
        "nowhere to keep the launch token: neither XDG_STATE_HOME nor HOME is an absolute path; set one of them, \
         or give the token in {TOKEN_ENV}"
    ))
}

/// Makes `dir` if it is missing, as the user's alone (0700; the folders above it as any other), and refuses one
/// that others may enter or change: whoever can change it can put a token of their own choosing there.
fn private_dir(dir: &Path) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("cannot make the folder {}: {e}", dir.display());
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(fail)?;
    }
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    match builder.create(dir) {
        // The umask could have taken bits away from the owner: the mode is set as meant.
        Ok(()) => set_mode(dir, 0o700).map_err(fail)?,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(fail(e)),
    }
    let meta = std::fs::metadata(dir).map_err(fail)?;
    if !meta.is_dir() {
        return Err(format!(
            "{} is not a folder; abp-peer keeps its launch token there",
            dir.display()
        ));
    }
    if let Some(mode) = open_to_others(&meta) {
        return Err(format!(
            "the folder {} is open to other users (mode {mode:o}), and abp-peer keeps its launch token there: \
             `chmod 700 {}`",
            dir.display(),
            dir.display()
        ));
    }
    Ok(())
}

/// The permission bits of a file or folder that others than its owner may use (on Unix); none elsewhere.
fn open_to_others(meta: &std::fs::Metadata) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        (mode & 0o077 != 0).then_some(mode)
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_: &Path, _: u32) -> std::io::Result<()> {
    Ok(())
}

/// The largest token file read: a token is 65 bytes, so anything far longer is not one.
const MAX_FILE_BYTES: u64 = 1024;

/// The stored token, `None` if there is no file. A file others can read, or one that does not hold a token as
/// this program writes it (64 hex digits and a line end), is an error naming it and `--new-token`: replacing it
/// silently would break every host configured with it, without a word.
fn read(path: &Path) -> Result<Option<Token>, String> {
    let fail = |e: std::io::Error| format!("cannot read the token file {}: {e}", path.display());
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(fail(e)),
    };
    let meta = file.metadata().map_err(fail)?;
    if !meta.is_file() {
        return Err(format!(
            "the token file {} is not a file: remove it, or start abp-peer with {NEW_TOKEN_FLAG}",
            path.display()
        ));
    }
    if let Some(mode) = open_to_others(&meta) {
        return Err(format!(
            "the token file {} is open to other users (mode {mode:o}), so someone may have the token: start \
             abp-peer with {NEW_TOKEN_FLAG} to replace it (or, if nobody else could have read it, `chmod 600 {}`)",
            path.display(),
            path.display()
        ));
    }
    let mut bytes = Vec::new();
    (&mut file)
        .take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(fail)?;
    let secret = std::str::from_utf8(&bytes)
        .ok()
        .map(|text| text.trim_end_matches(['\r', '\n']))
        .filter(|s| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()));
    match secret {
        Some(secret) => Ok(Some(Token {
            secret: secret.to_owned(),
            source: Source::Stored {
                path: path.to_owned(),
                minted: false,
            },
        })),
        None => Err(format!(
            "the token file {} does not hold a token (64 hex digits, as abp-peer writes it): start abp-peer with \
             {NEW_TOKEN_FLAG} to replace it",
            path.display()
        )),
    }
}

/// Mints a token and stores it at `path` unless a token is there already: `None` when another process stored
/// one first (the caller reads that one).
fn create(dir: &Path, path: &Path) -> Result<Option<Token>, String> {
    let token = Token::random(path)?;
    let temp = write_temp(dir, &token)?;
    // A link fails if the name is taken, and only a whole file ever gets the name.
    let linked = std::fs::hard_link(&temp, path);
    let _ = std::fs::remove_file(&temp);
    match linked {
        Ok(()) => Ok(Some(token)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(None),
        Err(e) => Err(format!(
            "cannot store the launch token in {}: {e} (or give one in {TOKEN_ENV})",
            path.display()
        )),
    }
}

/// `--new-token`: mints a token and puts it at `path` in place of any token there (a rename, so a process
/// starting meanwhile reads the old file or the new one, whole).
fn replace(dir: &Path, path: &Path) -> Result<Token, String> {
    let token = Token::random(path)?;
    let temp = write_temp(dir, &token)?;
    if let Err(e) = std::fs::rename(&temp, path) {
        let _ = std::fs::remove_file(&temp);
        return Err(format!(
            "cannot store the launch token in {}: {e} (or give one in {TOKEN_ENV})",
            path.display()
        ));
    }
    Ok(token)
}

/// Writes `token` to a new file of its own in `dir`, mode 0600, flushed to the disk; its path.
fn write_temp(dir: &Path, token: &Token) -> Result<PathBuf, String> {
    let mut suffix = [0u8; 8];
    getrandom::fill(&mut suffix)
        .map_err(|e| format!("the OS random number generator failed: {e}"))?;
    let temp = dir.join(format!(".token-{}", hex(&suffix)));
    let fail = |e: std::io::Error| format!("cannot write {}: {e}", temp.display());
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&temp).map_err(fail)?;
    let written = set_mode(&temp, 0o600)
        .and_then(|()| writeln!(file, "{}", token.secret))
        .and_then(|()| file.sync_all());
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(fail(e));
    }
    Ok(temp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_tokens_are_refused() {
        assert!(looks_random(&hex(&[
            0x3f, 0x9c, 0x11, 0xe1, 0x42, 0x07, 0xab, 0xcd
        ])));
        assert!(!looks_random(&"0".repeat(32)));
        assert!(!looks_random(&"abc".repeat(12)));
    }
}
