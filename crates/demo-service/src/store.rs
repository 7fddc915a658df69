//! The blob directory. Content is first written to `tmp/` and renamed into `blobs/` only when
//! complete, and the database row that makes a file visible is inserted only after that, so
//! an interrupted upload never shows up. A [`TempFile`] removes itself unless kept.

use std::io;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::io::AsyncWriteExt;

use crate::error::ApiError;

pub(crate) struct Store {
    root: PathBuf,
}

impl Store {
    pub(crate) fn open(data_dir: &Path) -> io::Result<Store> {
        for d in ["blobs", "tmp", "chunks"] {
            std::fs::create_dir_all(data_dir.join(d))?;
        }
        // Leftovers of uploads interrupted by a crash are never visible; drop them.
        if let Ok(rd) = std::fs::read_dir(data_dir.join("tmp")) {
            for e in rd.flatten() {
                let _ = std::fs::remove_file(e.path());
            }
        }
        Ok(Store {
            root: data_dir.to_path_buf(),
        })
    }

    pub(crate) fn blob_path(&self, blob: &str) -> PathBuf {
        self.root.join("blobs").join(&blob[..2]).join(blob)
    }

    pub(crate) fn chunk_dir(&self, upload: &str) -> PathBuf {
        self.root.join("chunks").join(upload)
    }

    /// A new, empty temp file.
    pub(crate) async fn temp(&self) -> io::Result<TempFile> {
        let path = self.root.join("tmp").join(random_hex(16));
        let file = tokio::fs::File::create(&path).await?;
        Ok(TempFile {
            path: Some(path),
            file: Some(file),
            len: 0,
        })
    }

    /// Moves a complete temp file into the blob directory; returns the blob name.
    pub(crate) async fn commit(&self, mut tmp: TempFile) -> io::Result<String> {
        if let Some(mut f) = tmp.file.take() {
            f.flush().await?;
        }
        let blob = random_hex(16);
        let dest = self.blob_path(&blob);
        if let Some(dir) = dest.parent() {
            tokio::fs::create_dir_all(dir).await?;
        }
        let src = tmp.path.take().expect("temp file has a path");
        if let Err(e) = tokio::fs::rename(&src, &dest).await {
            let _ = tokio::fs::remove_file(&src).await;
            return Err(e);
        }
        Ok(blob)
    }

    /// Moves a complete temp file to `dest` (replacing what is there).
    pub(crate) async fn persist(&self, mut tmp: TempFile, dest: &Path) -> io::Result<()> {
        if let Some(mut f) = tmp.file.take() {
            f.flush().await?;
        }
        let src = tmp.path.take().expect("temp file has a path");
        let r = tokio::fs::rename(&src, dest).await;
        if r.is_err() {
            let _ = tokio::fs::remove_file(&src).await;
        }
        r
    }

    /// Removes blobs no longer referenced (errors ignored: at worst a file is left over).
    pub(crate) async fn remove(&self, blobs: Vec<String>) {
        for b in blobs {
            let _ = tokio::fs::remove_file(self.blob_path(&b)).await;
        }
    }
}

/// A file in `tmp/` being written; deleted on drop unless [`Store::commit`] took it.
pub(crate) struct TempFile {
    pub(crate) path: Option<PathBuf>,
    file: Option<tokio::fs::File>,
    pub(crate) len: u64,
}

impl TempFile {
    pub(crate) async fn write(&mut self, data: &[u8]) -> io::Result<()> {
        if let Some(f) = self.file.as_mut() {
            f.write_all(data).await?;
            self.len += data.len() as u64;
        }
        Ok(())
    }

    /// Appends the whole of the file at `src`.
    pub(crate) async fn append_file(&mut self, src: &Path) -> io::Result<()> {
        let mut src = tokio::fs::File::open(src).await?;
        if let Some(f) = self.file.as_mut() {
            self.len += tokio::io::copy(&mut src, f).await?;
        }
        Ok(())
    }

    /// Writes the rest of `body` to the file; more than `limit` bytes in total is a 413.
    pub(crate) async fn write_body(
        &mut self,
        body: &mut Incoming,
        limit: u64,
    ) -> Result<(), ApiError> {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                ApiError::bad_request("body_interrupted", format!("request body interrupted: {e}"))
            })?;
            if let Ok(data) = frame.into_data() {
                if self.len + data.len() as u64 > limit {
                    return Err(ApiError::too_large(limit));
                }
                self.write(&data).await?;
            }
        }
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        drop(self.file.take());
        if let Some(p) = self.path.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Collects a small body (JSON) with a size limit.
pub(crate) async fn read_body(body: &mut Incoming, limit: u64) -> Result<Bytes, ApiError> {
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            ApiError::bad_request("body_interrupted", format!("request body interrupted: {e}"))
        })?;
        if let Ok(data) = frame.into_data() {
            if (out.len() + data.len()) as u64 > limit {
                return Err(ApiError::too_large(limit));
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(out.into())
}

/// `n` random bytes as lowercase hex, from the OS generator.
pub(crate) fn random_hex(n: usize) -> String {
    use argon2::password_hash::rand_core::{OsRng, RngCore};
    let mut b = vec![0u8; n];
    OsRng.fill_bytes(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}
