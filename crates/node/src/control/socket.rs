//! The control socket (a Unix stream socket, mode 0600, root and the node's user only): one
//! request line in (`control::commands`), one JSON line out; `monitor` keeps the connection and
//! streams events. The connections are served by the front thread (`control::front`).

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The listening control socket; removes its file when dropped.
#[derive(Debug)]
pub struct ControlServer {
    listener: UnixListener,
    path: PathBuf,
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
        // Until this takes effect others may connect; the front thread refuses them by their uid.
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        listener.set_nonblocking(true)?;
        Ok(ControlServer { listener, path: path.to_path_buf() })
    }

    /// Descriptor to poll.
    pub fn fd(&self) -> RawFd {
        self.listener.as_raw_fd()
    }

    /// The listener (non-blocking), for the front thread (`control::front`), which checks
    /// each client's uid (root or this node's user) before reading from it.
    pub fn listener(&self) -> &UnixListener {
        &self.listener
    }
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
