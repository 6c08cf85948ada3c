//! Where a SQLite database may live: not in a container's own writable layer, which is gone when
//! the container is replaced (a pod restart, an upgrade), and with it every balance and the whole
//! ledger. The JupyterHub package makes the same check (`jupyterhub_quota/host/durable.py`).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// File systems container runtimes give a container's root (its writable layer).
const CONTAINER_LAYERS: [&str; 3] = ["overlay", "aufs", "fuse.fuse-overlayfs"];

/// The type of the file system mounted at `/` in `mountinfo` (the last mount there wins).
pub fn root_fs_type(mountinfo: &str) -> Option<String> {
    let mut kind = None;
    for line in mountinfo.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // id parent major:minor root mount-point options [optional...] - fstype source options
        if f.len() > 7 && f[4] == "/" {
            if let Some(dash) = f[6..].iter().position(|s| *s == "-") {
                kind = f.get(6 + dash + 1).map(|s| s.to_string());
            }
        }
    }
    kind
}

/// The root's file system type if `path` (a file, existing or not) would be written to a
/// container's own layer: `/` is an overlay (or aufs) and the nearest existing folder of `path` is
/// on the same device as `/` (no volume mounted over it). None otherwise.
pub fn on_container_layer(path: &Path) -> Option<String> {
    let kind = root_fs_type(&std::fs::read_to_string("/proc/self/mountinfo").ok()?)?;
    if !CONTAINER_LAYERS.contains(&kind.as_str()) {
        return None;
    }
    let mut p: PathBuf = std::path::absolute(path).ok()?;
    while !p.exists() {
        if !p.pop() {
            return None;
        }
    }
    let same = std::fs::metadata(&p).ok()?.dev() == std::fs::metadata("/").ok()?.dev();
    same.then_some(kind)
}

/// Refuses a SQLite file on a container's own layer, saying how to fix it.
pub fn check(url: &str, path: &Path) -> Result<(), String> {
    if path == Path::new(":memory:") {
        return Ok(());
    }
    match on_container_layer(path) {
        None => Ok(()),
        Some(kind) => Err(format!(
            "--db {url}: the database would be {}, on the container's own file system ({kind}, not a \
             mounted volume): every balance and the whole ledger would be lost when the container \
             restarts. Put it on a volume (the image's /data; the Helm chart mounts a PersistentVolumeClaim \
             there), or use postgres://; or pass --allow-ephemeral-db if losing it is acceptable (a demo); \
             not serving",
            std::path::absolute(path)
                .unwrap_or_else(|_| path.to_path_buf())
                .display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_mount_at_root_gives_its_type() {
        let k8s = "2356 2164 0:389 / / rw,relatime master:633 - overlay overlay rw,lowerdir=/var/lib/x\n\
                   2357 2356 0:391 / /proc rw,nosuid - proc proc rw\n\
                   2380 2356 259:1 /var/lib/kubelet/pods/p/volumes/v /srv/jupyterhub rw - ext4 /dev/nvme0n1p1 rw\n";
        assert_eq!(root_fs_type(k8s).as_deref(), Some("overlay"));
        let vm = "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard\n";
        assert_eq!(root_fs_type(vm).as_deref(), Some("ext4"));
        let stacked = format!("{vm}65 27 0:39 / / rw,relatime - overlay overlay rw\n");
        assert_eq!(root_fs_type(&stacked).as_deref(), Some("overlay"));
        assert_eq!(root_fs_type("garbage\n"), None);
    }
}
