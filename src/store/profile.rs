//! The AWS shared configuration files' profile (`~/.aws/credentials` and `~/.aws/config`, or
//! `AWS_SHARED_CREDENTIALS_FILE` and `AWS_CONFIG_FILE`; profile `AWS_PROFILE`, else `default`), which
//! `object_store` does not read: its keys, its session token, its region and endpoint, as the S3
//! builder's configuration keys. Nothing is read when the environment has keys of its own.

use std::path::PathBuf;

/// The profile's settings as `(object_store key, value)`; empty when `AWS_ACCESS_KEY_ID` is set or no
/// file has the profile.
pub fn from_files() -> Vec<(String, String)> {
    if std::env::var_os("AWS_ACCESS_KEY_ID").is_some() {
        return Vec::new();
    }
    let profile = std::env::var("AWS_PROFILE").unwrap_or_else(|_| "default".into());
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let file = |variable: &str, name: &str| {
        std::env::var_os(variable)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws").join(name)))
    };
    let mut settings = Vec::new();
    // The credentials file names sections `[name]`; the config file `[profile name]` (and `[default]`).
    if let Some(text) = file("AWS_SHARED_CREDENTIALS_FILE", "credentials")
        .and_then(|p| std::fs::read_to_string(p).ok())
    {
        settings.extend(section(&text, &[profile.as_str()]));
    }
    if let Some(text) =
        file("AWS_CONFIG_FILE", "config").and_then(|p| std::fs::read_to_string(p).ok())
    {
        let named = format!("profile {profile}");
        settings.extend(section(&text, &[named.as_str(), profile.as_str()]));
    }
    let mut out: Vec<(String, String)> = Vec::new();
    for (key, value) in settings {
        let key = match key.as_str() {
            "aws_access_key_id" | "aws_secret_access_key" | "aws_session_token" => key,
            "region" => "aws_region".into(),
            "endpoint_url" => "aws_endpoint_url".into(),
            _ => continue,
        };
        if !out.iter().any(|(k, _)| *k == key) {
            out.push((key, value));
        }
    }
    out
}

/// The `key = value` lines of the first section named one of `names` in an INI text.
fn section(text: &str, names: &[&str]) -> Vec<(String, String)> {
    let mut inside = false;
    let mut found = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('#') || t.starts_with(';') || t.is_empty() {
            continue;
        }
        if let Some(name) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            if inside {
                break;
            }
            inside = names.contains(&name.trim());
            continue;
        }
        if inside {
            if let Some((k, v)) = t.split_once('=') {
                found.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::section;

    #[test]
    fn ini_sections() {
        let text = "[default]\naws_access_key_id = A\n# note\n[profile dev]\nregion=eu-west-1\nendpoint_url = http://127.0.0.1:9000\n[other]\nregion = x\n";
        assert_eq!(
            section(text, &["default"]),
            [("aws_access_key_id".into(), "A".into())]
        );
        assert_eq!(
            section(text, &["profile dev", "dev"]),
            [
                ("region".to_string(), "eu-west-1".to_string()),
                ("endpoint_url".into(), "http://127.0.0.1:9000".into())
            ]
        );
        assert!(section(text, &["missing"]).is_empty());
    }
}
