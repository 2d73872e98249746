//! The layering the library promises (docs/architecture.md), checked on the source: no import cycles
//! between modules, and a command line that leaves polars and rayon to the library.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/read/mod.rs` → `read`, `src/read/csv.rs` → `read/csv`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts.join("/")
}

/// The code of a file without its unit tests and comments.
fn code(text: &str) -> String {
    let body = text.split("#[cfg(test)]\nmod tests").next().unwrap();
    body.lines()
        .map(|l| l.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Module → the modules its code names (paths through `crate::`, `mfu::`, `super::`, and the `mod`
/// declarations of a folder module). A child naming its own parent is not an edge (it is inside it).
fn dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(&src, f)).collect();
    let path_re =
        regex::Regex::new(r"\b((?:crate|mfu|super)(?:::\w+)+)(?:::\{([^}]*)\})?").unwrap();
    let mod_re = regex::Regex::new(r"(?m)^\s*(?:pub(?:\([^)]*\))? )?mod (\w+);").unwrap();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let module = module_of(&src, file);
        if module == "main" || module == "lib" {
            continue;
        }
        let text = code(&std::fs::read_to_string(file).unwrap());
        let mut add = |target: String| {
            if target != module && !module.starts_with(&format!("{target}/")) {
                edges.entry(module.clone()).or_default().insert(target);
            }
        };
        for m in mod_re.captures_iter(&text) {
            let child = format!("{module}/{}", &m[1]);
            if modules.contains(&child) {
                add(child);
            }
        }
        for m in path_re.captures_iter(&text) {
            let mut segments: Vec<&str> = m[1].split("::").collect();
            let mut base: Vec<&str> = Vec::new();
            if segments[0] == "super" {
                base = module.split('/').collect();
                while segments.first() == Some(&"super") {
                    base.pop();
                    segments.remove(0);
                }
            } else {
                segments.remove(0);
            }
            let tails: Vec<Vec<&str>> = match m.get(2) {
                Some(list) => list
                    .as_str()
                    .split(',')
                    .map(|item| item.trim().split("::").next().unwrap())
                    .filter(|item| !item.is_empty())
                    .map(|item| {
                        let mut s = segments.clone();
                        s.push(item);
                        s
                    })
                    .collect(),
                None => vec![segments.clone()],
            };
            for tail in tails {
                // The longest prefix that is a module is what the path names.
                let named = (0..=tail.len())
                    .rev()
                    .map(|n| [&base[..], &tail[..n]].concat().join("/"))
                    .find(|m| modules.contains(m));
                if let Some(named) = named {
                    add(named);
                }
            }
        }
    }
    edges
}

#[test]
fn modules_import_each_other_in_one_direction() {
    let edges = dependencies();
    assert!(
        edges.get("pipeline").is_some_and(|d| d.contains("read")),
        "the scan sees imports: {edges:?}"
    );
    // A cycle exists when some module reaches itself; report the first path found.
    for start in edges.keys() {
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((module, path)) = stack.pop() {
            for next in edges.get(&module).into_iter().flatten() {
                assert!(
                    next != start,
                    "import cycle: {} -> {next}",
                    path.join(" -> ")
                );
                if seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push((next.clone(), longer));
                }
            }
        }
    }
}

#[test]
fn the_command_line_leaves_data_work_to_the_library() {
    let cli = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli");
    let mut files = Vec::new();
    rust_files(&cli, &mut files);
    assert!(files.len() >= 5, "{files:?}");
    for file in files {
        let text = code(&std::fs::read_to_string(&file).unwrap());
        for crate_name in ["polars", "rayon"] {
            assert!(
                !text.contains(&format!("{crate_name}::")),
                "{} uses {crate_name} directly: that belongs in the library",
                file.display()
            );
        }
    }
}
