//! Where bytes come from and go to when they are not on this machine: object storage (`s3://`,
//! `gs://`, `az://`, `abfs://`) and plain web servers (`http(s)://`), through arrow-rs's `object_store`.
//!
//! The readers never learn about URLs. A URL input is *staged*: its object, or every object under its
//! prefix that the folder walk could read, is copied into a private temporary folder (many at a time,
//! each streamed to disk as it arrives, so memory holds a few buffers whatever the sizes), and the
//! ordinary input expansion and readers run on that folder, with the URL standing in for the folder in
//! every name the user sees. The same discovery rules, run ids and output follow by construction. A URL
//! output is written to a temporary file here, then uploaded in parts: the object appears when the
//! upload completes, and a failure or an interrupt aborts the upload, so the destination holds the old
//! object or nothing, never a part.
//!
//! Staging costs disk space (the inputs' size) and reads whole objects even where a reader would take a
//! part (a Parquet file's footer); in exchange every input kind, run-folder files beside a log
//! included, reads exactly as it does from a local folder. Another store is one more arm in
//! [`open`].
//!
//! Configuration is each store's standard one: the `AWS_*` environment variables (`AWS_ENDPOINT_URL`
//! for S3-compatible stores, `AWS_ALLOW_HTTP` for a plain-HTTP endpoint), the shared credentials file's
//! profile (`AWS_PROFILE`), instance and container credentials; `GOOGLE_*` (service account files,
//! application-default credentials); `AZURE_*`; and options given in code (the Python package's
//! `storage_options`), which win. Nothing about credentials is printed: a URL is shown without its
//! query string or user information.

mod profile;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use std::io::Read;

use object_store::{ObjectStore, ObjectStoreExt, RetryConfig};

/// Objects fetched at once when staging a prefix.
const CONCURRENT_REQUESTS: usize = 16;
/// Bytes an upload sends a part at a time (S3's minimum part is 5 MiB).
const PART_BYTES: usize = 8 << 20;

/// What went wrong with a URL, in words that say what to do. Every message names the URL as
/// [`shown`] gives it, never a secret.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{url}: not a URL mfu reads ({why}); give s3://, gs://, az://, abfs://, http:// or https://")]
    BadUrl { url: String, why: String },
    #[error("{url}: no such object or prefix")]
    NotFound { url: String },
    #[error("{url}: no such bucket or container")]
    NoSuchBucket { url: String },
    #[error("{url}: access denied: the credentials found may not read or write here")]
    AccessDenied { url: String },
    #[error("{url}: no credentials found: set the store's environment variables (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE; GOOGLE_APPLICATION_CREDENTIALS; AZURE_STORAGE_ACCOUNT_NAME and a key), or run where instance credentials are available")]
    NoCredentials { url: String },
    #[error("{url}: the store could not be reached ({why}); check the endpoint (AWS_ENDPOINT_URL for an S3-compatible store) and the network")]
    Unreachable { url: String, why: String },
    #[error("{url}: plain HTTP is refused unless allowed: set AWS_ALLOW_HTTP=true (S3-compatible stores) or MFU_ALLOW_HTTP=true (http:// files), or the allow_http option")]
    HttpRefused { url: String },
    #[error("{url}: already exists; add --force to replace it")]
    Exists { url: String },
    #[error("{url}: interrupted; the upload was aborted and the destination is as it was")]
    Interrupted { url: String },
    #[error("{url}: {why}")]
    Other { url: String, why: String },
    #[error("{path}: {source}")]
    Local {
        path: String,
        source: std::io::Error,
    },
}

/// Whether `text` names a remote object rather than a local path: `scheme://` with a scheme mfu reads.
pub fn is_url(text: &str) -> bool {
    let Some((scheme, _)) = text.split_once("://") else {
        return false;
    };
    matches!(
        scheme.to_ascii_lowercase().as_str(),
        "s3" | "s3a" | "gs" | "az" | "adl" | "azure" | "abfs" | "abfss" | "http" | "https"
    )
}

/// A URL as it may be shown: no user information, no query string, no fragment.
pub fn shown(text: &str) -> String {
    match url::Url::parse(text) {
        Ok(mut url) => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.set_query(None);
            url.set_fragment(None);
            url.to_string()
        }
        Err(_) => text
            .split(['?', '#'])
            .next()
            .unwrap_or_default()
            .to_string(),
    }
}

/// Options for the stores, as key-value pairs (`aws_endpoint_url`, `aws_access_key_id`, `allow_http`,
/// `google_service_account`, `azure_storage_account_name`, ...): the keys each `object_store` builder
/// takes, which win over the environment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StorageOptions(pub Vec<(String, String)>);

impl StorageOptions {
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }
}

/// The runtime the stores' requests run on (two worker threads: the work is waiting on the network).
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("mfu-store")
            .enable_all()
            .build()
            .expect("a tokio runtime starts")
    })
}

/// The user's storage options applied to a store's builder, each by the config key its name parses to
/// (case-insensitively); a key this store does not know is left to the other stores.
fn with_options<B, K: std::str::FromStr>(
    builder: B,
    options: &StorageOptions,
    with_config: impl Fn(B, K, &String) -> B,
) -> B {
    options.0.iter().fold(builder, |b, (key, value)| {
        match key.to_ascii_lowercase().parse() {
            Ok(k) => with_config(b, k, value),
            Err(_) => b,
        }
    })
}

/// Retries with backoff on throttling and transient errors, bounded so that a store that is gone
/// fails in seconds, not minutes: `MFU_STORE_RETRIES` (default 5) and `MFU_STORE_RETRY_TIMEOUT_S`
/// (default 60).
fn retry_config() -> RetryConfig {
    let env = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    RetryConfig {
        max_retries: env("MFU_STORE_RETRIES").unwrap_or(5) as usize,
        retry_timeout: Duration::from_secs(env("MFU_STORE_RETRY_TIMEOUT_S").unwrap_or(60)),
        ..RetryConfig::default()
    }
}

/// An opened URL: its store and the path into it.
pub struct Remote {
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    /// The URL as shown.
    pub url: String,
}

/// Opens the store a URL names, configured from the environment and `options`.
pub fn open(text: &str, options: &StorageOptions) -> Result<Remote, StoreError> {
    let url = shown(text);
    let parsed = url::Url::parse(text).map_err(|e| StoreError::BadUrl {
        url: url.clone(),
        why: e.to_string(),
    })?;
    let (scheme, path) =
        object_store::ObjectStoreScheme::parse(&parsed).map_err(|e| StoreError::BadUrl {
            url: url.clone(),
            why: e.to_string(),
        })?;
    let path = ObjectPath::parse(path).map_err(|e| StoreError::BadUrl {
        url: url.clone(),
        why: e.to_string(),
    })?;
    let built: Result<Arc<dyn ObjectStore>, object_store::Error> = match scheme {
        object_store::ObjectStoreScheme::AmazonS3 => {
            use object_store::aws::AmazonS3Builder;
            let mut builder = AmazonS3Builder::from_env().with_url(text);
            for (key, value) in profile::from_files() {
                if std::env::var_os(key.to_ascii_uppercase()).is_none() {
                    if let Ok(k) = key.parse() {
                        builder = builder.with_config(k, value);
                    }
                }
            }
            with_options(builder, options, |b, k, v| b.with_config(k, v))
                .with_retry(retry_config())
                .build()
                .map(|s| Arc::new(s) as _)
        }
        object_store::ObjectStoreScheme::GoogleCloudStorage => {
            use object_store::gcp::GoogleCloudStorageBuilder;
            let builder = GoogleCloudStorageBuilder::from_env().with_url(text);
            with_options(builder, options, |b, k, v| b.with_config(k, v))
                .with_retry(retry_config())
                .build()
                .map(|s| Arc::new(s) as _)
        }
        object_store::ObjectStoreScheme::MicrosoftAzure => {
            use object_store::azure::MicrosoftAzureBuilder;
            let builder = MicrosoftAzureBuilder::from_env().with_url(text);
            with_options(builder, options, |b, k, v| b.with_config(k, v))
                .with_retry(retry_config())
                .build()
                .map(|s| Arc::new(s) as _)
        }
        object_store::ObjectStoreScheme::Http => {
            let allowed = |v: Option<&str>| {
                v.is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true"))
            };
            let allow_http = allowed(options.get("allow_http"))
                || allowed(std::env::var("MFU_ALLOW_HTTP").ok().as_deref());
            if parsed.scheme() == "http" && !allow_http {
                return Err(StoreError::HttpRefused { url });
            }
            let base = &text[..url::Position::BeforePath.index_in(&parsed)];
            object_store::http::HttpBuilder::new()
                .with_url(base)
                .with_client_options(object_store::ClientOptions::new().with_allow_http(allow_http))
                .with_retry(retry_config())
                .build()
                .map(|s| Arc::new(s) as _)
        }
        other => {
            return Err(StoreError::BadUrl {
                url,
                why: format!("{other:?} is not a remote store"),
            })
        }
    };
    let store = built.map_err(|e| classify(&url, e))?;
    Ok(Remote { store, path, url })
}

/// `index_in` for [`url::Position`]: the byte offset of a position in the URL's text.
trait PositionIndex {
    fn index_in(self, url: &url::Url) -> usize;
}

impl PositionIndex for url::Position {
    fn index_in(self, url: &url::Url) -> usize {
        url[..self].len()
    }
}

/// An `object_store` error in words that say what to do.
fn classify(url: &str, error: object_store::Error) -> StoreError {
    let url = url.to_string();
    let text = format!("{error}");
    let chain = {
        let mut all = text.clone();
        let mut source = std::error::Error::source(&error);
        while let Some(s) = source {
            all.push_str(": ");
            all.push_str(&s.to_string());
            source = s.source();
        }
        all
    };
    let has = |needle: &str| chain.contains(needle);
    match error {
        _ if has("NoSuchBucket") || has("ContainerNotFound") || has("bucket does not exist") => {
            StoreError::NoSuchBucket { url }
        }
        object_store::Error::NotFound { .. } => StoreError::NotFound { url },
        _ if has("Missing") && (has("credential") || has("access key") || has("secret")) => {
            StoreError::NoCredentials { url }
        }
        object_store::Error::Unauthenticated { .. } => StoreError::NoCredentials { url },
        object_store::Error::PermissionDenied { .. } => StoreError::AccessDenied { url },
        _ if has("AccessDenied")
            || has("InvalidAccessKeyId")
            || has("SignatureDoesNotMatch")
            || has("403 Forbidden")
            || has("401 Unauthorized") =>
        {
            StoreError::AccessDenied { url }
        }
        _ if has("error sending request")
            || has("Connection refused")
            || has("connection closed")
            || has("dns error")
            || has("timed out")
            || has("error trying to connect")
            || has("HTTP error") =>
        {
            StoreError::Unreachable {
                url,
                why: short(&chain),
            }
        }
        _ if has("without TLS") || has("HTTP not allowed") => StoreError::HttpRefused { url },
        _ => StoreError::Other {
            url,
            why: short(&chain),
        },
    }
}

/// An error chain cut to one readable line.
fn short(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(300) {
        Some((at, _)) => format!("{}...", &line[..at]),
        None => line.to_string(),
    }
}

/// A URL input copied into a private folder, removed when dropped.
pub struct Staged {
    /// The local stand-in: the staged object itself, or the folder that mirrors the prefix.
    pub local: PathBuf,
    /// The URL as shown, for names the user sees.
    pub url: String,
    /// Objects and bytes copied.
    pub objects: usize,
    pub bytes: u64,
    /// Objects under the prefix left out because no reader takes them (checkpoints, images, ...).
    pub left_out: usize,
    _folder: tempfile::TempDir,
}

impl Staged {
    /// The local name that stands for the URL's location, and that location: the copied folder and
    /// the prefix's URL, or, for one object, the folder it was copied into and the URL's parent (where
    /// the files read beside it are).
    pub fn names(&self) -> (String, String) {
        if self.local.is_dir() {
            (self.local.display().to_string(), self.url.clone())
        } else {
            let folder = self._folder.path().display().to_string();
            let parent = self
                .url
                .rsplit_once('/')
                .map_or(self.url.as_str(), |(p, _)| p)
                .to_string();
            (folder, parent)
        }
    }
}

/// Whether an object under a staged prefix could be something a folder walk reads, or a file a reader
/// opens beside a log: log and table extensions (compressed too), TensorBoard event files, W&B run logs
/// and their `files/`, MLflow run folders (metric, parameter and tag files have no extension), DVCLive
/// folders, console logs and configs. Checkpoints, weights, images and the like are not fetched.
pub fn worth_staging(key: &str) -> bool {
    let name = key.rsplit('/').next().unwrap_or(key).to_ascii_lowercase();
    let bare = name
        .strip_suffix(".gz")
        .or_else(|| name.strip_suffix(".zst"))
        .unwrap_or(&name);
    let extension = bare.rsplit_once('.').map(|(_, e)| e);
    if name.starts_with("events.out.tfevents") {
        return true;
    }
    if let Some(e) = extension {
        return matches!(
            e,
            "jsonl"
                | "ndjson"
                | "json"
                | "csv"
                | "tsv"
                | "parquet"
                | "pq"
                | "log"
                | "out"
                | "txt"
                | "wandb"
                | "yaml"
                | "yml"
                | "db"
        );
    }
    // MLflow's file store keeps each metric, parameter and tag in a file without an extension.
    key.split('/')
        .any(|part| matches!(part, "metrics" | "params" | "tags"))
}

/// Files a reader opens beside a log: staged with a single object so that it reads as it does at
/// home (an HF checkpoint's `config.json`, ms-swift's `args.json`, a W&B run's `files/`).
const BESIDE: [&str; 5] = [
    "config.json",
    "args.json",
    "files/wandb-metadata.json",
    "files/wandb-summary.json",
    "files/config.yaml",
];

impl Remote {
    /// The key of an object under this URL's path.
    fn child(&self, relative: &str) -> ObjectPath {
        let base = self.path.as_ref().trim_end_matches('/');
        if base.is_empty() {
            ObjectPath::from(relative)
        } else {
            ObjectPath::from(format!("{base}/{relative}"))
        }
    }

    /// Whether this URL names one object (its size), rather than a prefix.
    fn object_size(&self) -> Result<Option<u64>, StoreError> {
        if self.path.as_ref().is_empty() || self.url.ends_with('/') {
            return Ok(None);
        }
        match runtime().block_on(self.store.head(&self.path)) {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(classify(&self.url, e)),
        }
    }

    /// Copies the object or the readable objects under the prefix into a private folder.
    pub fn stage(&self) -> Result<Staged, StoreError> {
        let folder = tempfile::Builder::new()
            .prefix("mfu-remote-")
            .tempdir()
            .map_err(|e| StoreError::Local {
                path: std::env::temp_dir().display().to_string(),
                source: e,
            })?;
        let name = self
            .path
            .filename()
            .map(str::to_string)
            .unwrap_or_else(|| "object".into());
        if self.object_size()?.is_some() {
            // One object, and what a reader would open beside it.
            let parent = match self.path.as_ref().rsplit_once('/') {
                Some((p, _)) => p.to_string(),
                None => String::new(),
            };
            let mut fetch = vec![(self.path.clone(), folder.path().join(&name))];
            let beside_url = Remote {
                store: self.store.clone(),
                path: ObjectPath::from(parent),
                url: self.url.clone(),
            };
            for relative in BESIDE {
                let key = beside_url.child(relative);
                if key != self.path && runtime().block_on(self.store.head(&key)).is_ok() {
                    fetch.push((key, folder.path().join(relative)));
                }
            }
            let (objects, bytes) = self.fetch_all(fetch)?;
            return Ok(Staged {
                local: folder.path().join(&name),
                url: self.url.clone(),
                objects,
                bytes,
                left_out: 0,
                _folder: folder,
            });
        }
        // A prefix: everything under it (as a folder: `prefix/`, never `prefix-other/`).
        let prefix = self.path.clone();
        let listed: Vec<object_store::ObjectMeta> = runtime()
            .block_on(
                self.store
                    .list(if prefix.as_ref().is_empty() {
                        None
                    } else {
                        Some(&prefix)
                    })
                    .try_collect(),
            )
            .map_err(|e| classify(&self.url, e))?;
        if listed.is_empty() {
            return Err(StoreError::NotFound {
                url: self.url.clone(),
            });
        }
        let base = prefix.as_ref().trim_end_matches('/');
        // The copy is a folder named as the prefix's last part (the bucket's name for a whole
        // bucket), so that a run folder given itself keeps its name (TensorBoard's run id).
        let folder_name = match base.rsplit('/').next().filter(|n| !n.is_empty()) {
            Some(n) => n.to_string(),
            None => url::Url::parse(&self.url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_string))
                .unwrap_or_else(|| "bucket".into()),
        };
        let root = folder.path().join(&folder_name);
        let mut fetch = Vec::new();
        let mut left_out = 0;
        for meta in listed {
            let key = meta.location.as_ref();
            let relative = if base.is_empty() {
                key
            } else {
                key.strip_prefix(base)
                    .and_then(|r| r.strip_prefix('/'))
                    .unwrap_or(key)
            };
            if relative.is_empty() || relative.split('/').any(|p| p == ".." || p.is_empty()) {
                left_out += 1;
                continue;
            }
            if !worth_staging(relative) {
                left_out += 1;
                continue;
            }
            fetch.push((meta.location.clone(), root.join(relative)));
        }
        let (objects, bytes) = self.fetch_all(fetch)?;
        std::fs::create_dir_all(&root).map_err(|source| StoreError::Local {
            path: root.display().to_string(),
            source,
        })?;
        Ok(Staged {
            local: root,
            url: self.url.trim_end_matches('/').to_string(),
            objects,
            bytes,
            left_out,
            _folder: folder,
        })
    }

    /// Fetches objects to local files, [`CONCURRENT_REQUESTS`] at a time, each streamed to disk.
    fn fetch_all(&self, fetch: Vec<(ObjectPath, PathBuf)>) -> Result<(usize, u64), StoreError> {
        let count = fetch.len();
        let store = self.store.clone();
        let url = self.url.clone();
        let bytes = runtime().block_on(async move {
            futures::stream::iter(fetch.into_iter().map(|(key, to)| {
                let store = store.clone();
                let url = url.clone();
                async move { fetch_one(store.as_ref(), &key, &to, &url).await }
            }))
            .buffer_unordered(CONCURRENT_REQUESTS)
            .try_fold(0u64, |sum, n| async move { Ok(sum + n) })
            .await
        })?;
        Ok((count, bytes))
    }

    /// Whether an object exists at this URL.
    pub fn exists(&self) -> Result<bool, StoreError> {
        Ok(self.object_size()?.is_some())
    }

    /// Uploads a local file to this URL in parts. The object appears only when the last part is in; on
    /// a failure, or an interrupt (SIGINT, SIGTERM) between parts, the upload is aborted and the
    /// destination is left as it was. An existing object is refused unless `force`.
    pub fn upload(&self, local: &Path, force: bool) -> Result<u64, StoreError> {
        if self.path.as_ref().is_empty() || self.url.ends_with('/') {
            return Err(StoreError::BadUrl {
                url: self.url.clone(),
                why: "an output URL names an object, not a prefix".into(),
            });
        }
        if !force && self.exists()? {
            return Err(StoreError::Exists {
                url: self.url.clone(),
            });
        }
        let interrupted = interrupt_flag();
        let local_error = |source| StoreError::Local {
            path: local.display().to_string(),
            source,
        };
        let mut file = std::fs::File::open(local).map_err(local_error)?;
        let url = self.url.clone();
        runtime().block_on(async {
            let mut upload = self
                .store
                .put_multipart(&self.path)
                .await
                .map_err(|e| classify(&url, e))?;
            // Parts one at a time: an output is written once, and a failed part aborts the rest.
            let mut sent = 0u64;
            let failure = loop {
                if interrupted.load(Ordering::SeqCst) {
                    break Some(StoreError::Interrupted { url: url.clone() });
                }
                let mut part = Vec::with_capacity(PART_BYTES);
                match std::io::Read::by_ref(&mut file)
                    .take(PART_BYTES as u64)
                    .read_to_end(&mut part)
                {
                    Ok(0) if sent > 0 => break None,
                    Ok(n) => {
                        sent += n as u64;
                        let last = n < PART_BYTES;
                        if let Err(e) = upload.put_part(bytes::Bytes::from(part).into()).await {
                            break Some(classify(&url, e));
                        }
                        if last {
                            break None;
                        }
                    }
                    Err(e) => break Some(local_error(e)),
                }
            };
            let failure = match failure {
                None if interrupted.load(Ordering::SeqCst) => {
                    Some(StoreError::Interrupted { url: url.clone() })
                }
                None => match upload.complete().await {
                    Ok(_) => return Ok(sent),
                    Err(e) => classify(&url, e),
                }
                .into(),
                Some(failure) => Some(failure),
            };
            // The object never appeared; the parts sent are thrown away.
            let _ = upload.abort().await;
            Err(failure.expect("a failure"))
        })
    }
}

/// One object to one local file, streamed.
async fn fetch_one(
    store: &dyn ObjectStore,
    key: &ObjectPath,
    to: &Path,
    url: &str,
) -> Result<u64, StoreError> {
    let shown_key = format!(
        "{}/{}",
        url.trim_end_matches('/'),
        key.filename().unwrap_or("")
    );
    let local_error = |source| StoreError::Local {
        path: to.display().to_string(),
        source,
    };
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(local_error)?;
    }
    let got = store.get(key).await.map_err(|e| classify(&shown_key, e))?;
    let mut stream = got.into_stream();
    let mut file = std::fs::File::create(to).map_err(local_error)?;
    let mut written = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| classify(&shown_key, e))?;
        std::io::Write::write_all(&mut file, &chunk).map_err(local_error)?;
        written += chunk.len() as u64;
    }
    Ok(written)
}

/// A flag set by SIGINT or SIGTERM while an upload runs (the handler is installed once, by the first
/// upload; a second signal ends the process as usual).
fn interrupt_flag() -> &'static AtomicBool {
    static FLAG: AtomicBool = AtomicBool::new(false);
    static INSTALLED: OnceLock<()> = OnceLock::new();
    extern "C" fn on_signal(signal: libc::c_int) {
        if FLAG.swap(true, Ordering::SeqCst) {
            // SAFETY: restoring the default action and re-raising are async-signal-safe.
            unsafe {
                libc::signal(signal, libc::SIG_DFL);
                libc::raise(signal);
            }
        }
    }
    INSTALLED.get_or_init(|| {
        // SAFETY: the handler only touches an atomic and async-signal-safe calls.
        unsafe {
            libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
            libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        }
    });
    &FLAG
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_what_is_shown() {
        assert!(is_url("s3://bucket/runs/"));
        assert!(is_url("GS://bucket/x.jsonl"));
        assert!(is_url("https://example.com/log.csv"));
        assert!(!is_url("runs/log.jsonl"));
        assert!(!is_url("C:\\runs\\log.jsonl"));
        assert!(!is_url("ftp://example.com/x"));
        assert_eq!(
            shown("https://user:secret@example.com/a/log.csv?X-Amz-Signature=abc#x"),
            "https://example.com/a/log.csv"
        );
        assert_eq!(shown("s3://bucket/runs/"), "s3://bucket/runs/");
    }

    #[test]
    fn what_a_prefix_stages() {
        for key in [
            "a/log.jsonl",
            "a/log.csv.gz",
            "run/events.out.tfevents.1700000000.host.1.0",
            "wandb/run-x/run-abc.wandb",
            "wandb/run-x/files/wandb-summary.json",
            "mlruns/1/abc/metrics/train/loss",
            "mlruns/1/abc/meta.yaml",
            "out/trainer_state.json",
            "train.log",
        ] {
            assert!(worth_staging(key), "{key}");
        }
        for key in [
            "ckpt/model.safetensors",
            "ckpt/pytorch_model.bin",
            "images/plot.png",
            "ckpt/optimizer.pt",
            "README",
        ] {
            assert!(!worth_staging(key), "{key}");
        }
    }
}
