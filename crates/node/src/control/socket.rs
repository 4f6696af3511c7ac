//! The control socket (a Unix stream socket, mode 0600, root and the node's user only): one
//! request line in (`control::commands`), one JSON line out; `monitor` keeps the connection and
//! streams events.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;
use zeroize::Zeroizing;

/// How long a client may take to send its request or read the answer (the data path does
/// not wait: it runs on threads of its own).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);

/// The listening control socket; removes its file when dropped.
#[derive(Debug)]
pub struct ControlServer {
    listener: UnixListener,
    path: PathBuf,
}

/// A connected client and its request line (zeroized when dropped: it may hold keys).
#[derive(Debug)]
pub struct Client {
    /// The connection, blocking with a 2 s timeout.
    pub stream: UnixStream,
    /// The request, without its newline.
    pub line: Zeroizing<Vec<u8>>,
}

impl ControlServer {
    /// Binds `path` with mode 0600, replacing a stale socket file left by a node that died.
    pub fn bind(path: &Path) -> io::Result<ControlServer> {
        if UnixStream::connect(path).is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!("{}: another node answers on this socket", path.display()),
            ));
        }
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path)?;
        // Until this takes effect others may connect; `accept` refuses them by their uid.
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        listener.set_nonblocking(true)?;
        Ok(ControlServer { listener, path: path.to_path_buf() })
    }

    /// Descriptor to poll.
    pub fn fd(&self) -> RawFd {
        self.listener.as_raw_fd()
    }

    /// The next pending client with its request line; None when no client waits. Clients that
    /// are neither root nor this node's user are refused (told so and closed), as are those
    /// that send no line in time or one longer than `max` bytes.
    pub fn accept(&self, max: usize) -> Option<Client> {
        loop {
            let (stream, _) = self.listener.accept().ok()?;
            if let Some(c) = Self::read(stream, max) {
                return Some(c);
            }
        }
    }

    fn read(stream: UnixStream, max: usize) -> Option<Client> {
        let uid = crate::sys::peer_uid(stream.as_raw_fd()).ok()?;
        stream.set_nonblocking(false).ok()?;
        stream.set_read_timeout(Some(CLIENT_TIMEOUT)).ok()?;
        stream.set_write_timeout(Some(CLIENT_TIMEOUT)).ok()?;
        if uid != 0 && uid != crate::sys::euid() {
            let _ = (&stream).write_all(b"{\"ok\":false,\"error\":\"permission denied: only root and the node's user may use this socket\"}\n");
            return None;
        }
        let mut line = Zeroizing::new(Vec::new());
        let mut r = BufReader::new((&stream).take(max as u64 + 1));
        r.read_until(b'\n', &mut line).ok()?;
        if line.len() > max {
            let _ = (&stream).write_all(b"{\"ok\":false,\"error\":\"request too long\"}\n");
            return None;
        }
        while line.last().is_some_and(|b| b.is_ascii_whitespace()) {
            line.pop();
        }
        Some(Client { stream, line })
    }
}

/// Writes one JSON reply line to a client.
pub fn reply(c: &Client, v: &str) {
    let mut s = &c.stream;
    let _ = s.write_all(v.as_bytes()).and_then(|_| s.write_all(b"\n"));
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Sends `command` to the node at `path` and returns its reply.
pub fn query(path: &Path, command: &str) -> io::Result<String> {
    let mut s = UnixStream::connect(path)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    s.write_all(command.as_bytes())?;
    s.write_all(b"\n")?;
    s.shutdown(std::net::Shutdown::Write)?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out.trim_end().to_string())
}
