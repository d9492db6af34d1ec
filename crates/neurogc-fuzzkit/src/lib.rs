//! What the crates' bounded fuzzing passes (`tests/fuzz_*.rs`, proptest) share, the scratch
//! directories tests write into ([`ScratchDir`], removed when dropped), and the copies of
//! committed fixtures that integration tests change.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::Config;

/// `cases` unless `PROPTEST_CASES` says otherwise (to run longer:
/// `PROPTEST_CASES=100000 cargo test -p CRATE --test fuzz_NAME`); failures are not saved to files
/// in the tree.
pub fn config(cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// An edit of a valid file's bytes, as the readers' fuzzing passes make them.
#[derive(Clone, Debug)]
pub enum Mutation {
    /// Cut the file at a point (a crash mid-write).
    Truncate(Index),
    /// Insert a token at a point.
    Insert(Index, &'static str),
    /// Delete up to this many bytes from a point.
    Delete(Index, usize),
    /// Append text to the first line (the header): `,cpu` repeats a column.
    AppendToFirstLine(&'static str),
}

impl Mutation {
    pub fn apply(&self, bytes: &mut Vec<u8>) {
        let at = |i: &Index, bytes: &Vec<u8>| i.index(bytes.len() + 1);
        match self {
            Mutation::Truncate(i) => bytes.truncate(at(i, bytes)),
            Mutation::Insert(i, t) => {
                let at = at(i, bytes);
                bytes.splice(at..at, t.bytes());
            }
            Mutation::Delete(i, n) => {
                let at = at(i, bytes);
                bytes.drain(at..(at + n).min(bytes.len()));
            }
            Mutation::AppendToFirstLine(t) => {
                let end = bytes
                    .iter()
                    .position(|&b| b == b'\n')
                    .unwrap_or(bytes.len());
                bytes.splice(end..end, t.bytes());
            }
        }
    }
}

/// A truncation, an insertion of one of `tokens`, or a deletion of 1 to 7 bytes.
pub fn byte_mutation(
    tokens: impl Into<Cow<'static, [&'static str]>>,
) -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<Index>().prop_map(Mutation::Truncate),
        (any::<Index>(), prop::sample::select(tokens)).prop_map(|(i, t)| Mutation::Insert(i, t)),
        (any::<Index>(), 1..8usize).prop_map(|(i, n)| Mutation::Delete(i, n)),
    ]
}

/// A fresh path `N.ext` in a per-process temporary directory named after `test`.
pub fn temp_path(test: &str, ext: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!("neurogc-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir.join(format!("{}.{ext}", N.fetch_add(1, Ordering::Relaxed)))
}

/// A fresh directory for one test, `neurogc-{name}-{pid}-{n}` under the system's temporary
/// directory, removed with everything in it when dropped (a failing test's panic unwinds through
/// it too), so that tests leave nothing behind. Use it as a `&Path`.
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    pub fn new(name: &str) -> ScratchDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "neurogc-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        ScratchDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl std::ops::Deref for ScratchDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for ScratchDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Copies the directory `from` into `to`, recursively (a committed fixture a test may change).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("a directory to copy into");
    for e in std::fs::read_dir(from).expect("a directory to copy") {
        let e = e.expect("a directory entry");
        let dest = to.join(e.file_name());
        if e.file_type().expect("its type").is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).expect("a copied file");
        }
    }
}
