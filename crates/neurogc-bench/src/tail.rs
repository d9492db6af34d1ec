//! Follows a file that another process appends to, yielding complete lines only: the rest of a
//! line still being written waits for the next poll.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

pub struct Tail {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
}

impl Tail {
    pub fn new(path: &Path) -> Tail {
        Tail {
            path: path.to_path_buf(),
            offset: 0,
            partial: Vec::new(),
        }
    }

    /// New complete lines since the last call (none if the file does not exist yet).
    pub fn poll(&mut self) -> Vec<String> {
        let Ok(mut f) = File::open(&self.path) else {
            return Vec::new();
        };
        let mut buf = Vec::new();
        if f.seek(SeekFrom::Start(self.offset)).is_err() || f.read_to_end(&mut buf).is_err() {
            return Vec::new();
        }
        self.offset += buf.len() as u64;
        self.partial.extend_from_slice(&buf);
        let Some(last_newline) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return Vec::new();
        };
        let complete: Vec<u8> = self.partial.drain(..=last_newline).collect();
        String::from_utf8_lossy(&complete)
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn yields_only_complete_lines() {
        let dir = std::env::temp_dir().join(format!("neurogc-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.txt");
        let mut tail = Tail::new(&path);
        assert!(tail.poll().is_empty());
        let mut f = File::create(&path).unwrap();
        f.write_all(b"a,b\n1,2\n3,").unwrap();
        assert_eq!(tail.poll(), vec!["a,b", "1,2"]);
        f.write_all(b"4\n").unwrap();
        assert_eq!(tail.poll(), vec!["3,4"]);
        assert!(tail.poll().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
