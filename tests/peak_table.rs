//! The embedded peak table against the shared reference, the device-name cases frameworks really print, and
//! properties of the matcher.

use std::collections::{BTreeMap, BTreeSet};

use mfu::peaks::{tokenize, Dtype, MatchOutcome, Matcher, PeakTable, Resolver};
use proptest::prelude::*;

use crate::util::{rel_diff, shared_file};

/// Reference (device, form-factor prefix) → our entry. Rows not listed here must be in `PACKAGE_ROWS`.
const REFERENCE_TO_ENTRY: &[(&str, &str, &str)] = &[
    ("V100", "SXM2", "V100 SXM2"),
    ("V100", "PCIe", "V100 PCIe"),
    ("V100S", "PCIe", "V100S PCIe"),
    ("T4", "PCIe", "T4"),
    ("Quadro RTX 6000", "PCIe", "Quadro RTX 6000"),
    ("A100", "SXM4", "A100 SXM4"),
    ("A100", "PCIe", "A100 PCIe"),
    ("A800", "SXM4", "A800 SXM4"),
    ("A800", "PCIe", "A800 PCIe"),
    ("A10", "PCIe", "A10"),
    ("A10G", "PCIe", "A10G"),
    ("A30", "PCIe", "A30"),
    ("A40", "PCIe", "A40"),
    ("RTX A6000", "PCIe", "RTX A6000"),
    ("GeForce RTX 3090", "PCIe", "GeForce RTX 3090"),
    ("L4", "PCIe", "L4"),
    ("L40", "PCIe", "L40"),
    ("L40S", "PCIe", "L40S"),
    ("L20", "PCIe", "L20"),
    ("RTX 6000 Ada Generation", "PCIe", "RTX 6000 Ada Generation"),
    ("GeForce RTX 4090", "PCIe", "GeForce RTX 4090"),
    ("H100", "SXM5", "H100 SXM5"),
    ("H100", "PCIe", "H100 PCIe"),
    ("H100 NVL", "PCIe", "H100 NVL"),
    ("H200", "SXM", "H200 SXM"),
    ("H200 NVL", "PCIe", "H200 NVL"),
    ("H800", "SXM5", "H800 SXM5"),
    ("H800", "PCIe", "H800 PCIe"),
    ("H20", "SXM5", "H20"),
    ("GH200", "Grace Hopper", "GH200"),
    ("B100", "SXM", "B100"),
    ("B200", "SXM", "B200"),
    ("GB200", "Grace Blackwell superchip", "GB200"),
    ("B300", "SXM", "B300"),
    ("GB300", "Grace Blackwell Ultra", "GB300"),
    ("GB10", "DGX Spark", "GB10"),
    ("GeForce RTX 5090", "PCIe", "GeForce RTX 5090"),
    ("RTX PRO 6000 Blackwell", "PCIe", "RTX PRO 6000 Blackwell"),
    ("Instinct MI100", "PCIe", "Instinct MI100"),
    ("Instinct MI210", "PCIe", "Instinct MI210"),
    ("Instinct MI250", "per GCD", "Instinct MI250 (GCD)"),
    ("Instinct MI250X", "per GCD", "Instinct MI250X (GCD)"),
    ("Instinct MI300A", "APU", "Instinct MI300A"),
    ("Instinct MI300X", "OAM", "Instinct MI300X"),
    ("Instinct MI325X", "OAM", "Instinct MI325X"),
    ("Instinct MI350X", "OAM", "Instinct MI350X"),
    ("Instinct MI355X", "OAM", "Instinct MI355X"),
    ("TPU v2", "per JAX", "TPU v2 (TensorCore)"),
    ("TPU v3", "per JAX", "TPU v3 (TensorCore)"),
    ("TPU v4", "per chip", "TPU v4"),
    ("TPU v5e", "per chip", "TPU v5e"),
    ("TPU v5p", "per chip", "TPU v5p"),
    ("TPU v6e (Trillium)", "per chip", "TPU v6e"),
    ("TPU7x (Ironwood)", "per JAX", "TPU7x (TensorCore)"),
    ("Trainium (Trn1)", "per torch", "Trainium (NeuronCore-v2)"),
    (
        "Inferentia2 (Inf2)",
        "per torch",
        "Inferentia2 (NeuronCore-v2)",
    ),
    ("Trainium2 (Trn2)", "per torch", "Trainium2 (logical core)"),
    ("Trainium3 (Trn3)", "per torch", "Trainium3 (logical core)"),
    ("Gaudi2", "OAM", "Gaudi2"),
    ("Gaudi3", "OAM", "Gaudi3"),
    (
        "Data Center GPU Max 1550 (Ponte Vecchio)",
        "OAM",
        "Data Center GPU Max 1550",
    ),
];

/// Reference rows for a whole package or chip of several framework devices: not a per-device denominator.
/// (device, form-factor prefix, framework devices per package).
const PACKAGE_ROWS: &[(&str, &str, f64)] = &[
    ("Instinct MI250", "OAM package", 2.0),
    ("Instinct MI250X", "OAM package", 2.0),
    ("TPU v2", "per chip", 2.0),
    ("TPU v3", "per chip", 2.0),
    ("TPU7x (Ironwood)", "per chip", 2.0),
    ("Trainium (Trn1)", "per chip", 2.0),
    ("Inferentia2 (Inf2)", "per chip", 2.0),
    // Trn2/Trn3 per-device figures come from the per-core rate, not chip / 4: see the table's source.
    ("Trainium2 (Trn2)", "per chip", 0.0),
    ("Trainium3 (Trn3)", "per chip", 0.0),
];

fn dtype_named(s: &str) -> Dtype {
    s.parse().unwrap()
}

#[test]
fn table_agrees_with_the_shared_reference() {
    let Some(path) = shared_file("reference/peak_reference.csv") else {
        return;
    };
    let table = PeakTable::builtin();
    let mut reader = csv::Reader::from_path(&path).unwrap();
    let mut seen_entries = BTreeSet::new();
    let mut checked = 0;
    for row in reader.deserialize::<BTreeMap<String, String>>() {
        let row = row.unwrap();
        let (device, form, dtype, dense) = (
            &row["device"],
            &row["form_factor"],
            &row["dtype"],
            &row["dense_peak_tflops"],
        );
        if device == "TPU (all generations)" {
            // fp32/fp64 are not published for any TPU: no TPU entry may carry them.
            for e in table.entries().iter().filter(|e| e.vendor == "Google") {
                assert_eq!(e.peak(dtype_named(dtype)), None, "{} {dtype}", e.name);
            }
            continue;
        }
        let mapped = REFERENCE_TO_ENTRY
            .iter()
            .find(|(d, f, _)| d == device && form.starts_with(f));
        let Some((_, _, entry_name)) = mapped else {
            let package = PACKAGE_ROWS
                .iter()
                .find(|(d, f, _)| d == device && form.starts_with(f));
            let (_, _, per_package) =
                package.unwrap_or_else(|| panic!("reference row {device} / {form} is not mapped"));
            // Where the split is exact, the per-device entry times the devices per package is the package.
            if *per_package > 0.0 && !dense.is_empty() {
                let per_device = REFERENCE_TO_ENTRY
                    .iter()
                    .find(|(d, _, _)| d == device)
                    .map(|(_, _, n)| table.get(n).unwrap());
                if let Some(p) = per_device.and_then(|e| e.peak(dtype_named(dtype))) {
                    let package_flops: f64 = dense.parse::<f64>().unwrap() * 1e12;
                    assert!(
                        rel_diff(p * per_package, package_flops) < 1e-3,
                        "{device} {dtype}: {p} x {per_package} vs package {package_flops}"
                    );
                }
            }
            continue;
        };
        let entry = table
            .get(entry_name)
            .unwrap_or_else(|| panic!("no entry {entry_name}"));
        seen_entries.insert(entry.name.clone());
        let ours = entry.peak(dtype_named(dtype));
        match (dense.trim(), ours) {
            ("", None) => {}
            // A figure the reference lacks is either derived (and the source says how) or printed by the
            // vendor document the source cites first.
            ("", Some(v)) => assert!(
                entry.source.contains("derived") || mfu::peaks::cites_vendor(&entry.source),
                "{entry_name} {dtype}: we give {v} where the reference has none, and the source does not say why"
            ),
            (r, Some(v)) => {
                let r: f64 = r.parse().unwrap();
                assert!(
                    rel_diff(v, r * 1e12) < 1e-9 || entry.source.contains("differs from the reference"),
                    "{entry_name} {dtype}: ours {v}, reference {r} TFLOP/s"
                );
            }
            (r, None) => panic!("{entry_name} {dtype}: reference has {r} TFLOP/s, table has none"),
        }
        checked += 1;
    }
    assert!(checked > 250, "checked {checked} reference rows");
    assert!(seen_entries.len() >= 57, "{} devices", seen_entries.len());
    // An entry the reference does not have is named by the repository's own cases, which fix its values.
    let cased = repository_cases();
    for e in table.entries() {
        assert!(
            seen_entries.contains(&e.name) || cased.iter().any(|c| c.device == e.name),
            "{} is neither in the reference nor in tests/data/device_names.csv",
            e.name
        );
    }
}

#[test]
fn every_device_case_from_the_shared_reference_holds() {
    let Some(path) = shared_file("reference/device_cases.csv") else {
        return;
    };
    let resolver = Resolver::builtin();
    let mut reader = csv::Reader::from_path(&path).unwrap();
    let mut failures = Vec::new();
    let mut n = 0;
    for row in reader.deserialize::<(String, String, String)>() {
        let (raw, dtype, expect) = row.unwrap();
        n += 1;
        let got = resolver.resolve(Some(&raw), Some(&dtype));
        let tflops = got.peak.map(|p| p / 1e12);
        let ok = match expect.as_str() {
            "unknown" => tflops.is_none(),
            e if e.starts_with("not:") => {
                let bad: f64 = e[4..].parse().unwrap();
                tflops.is_none_or(|t| rel_diff(t, bad) > 0.005)
            }
            e => {
                let want: f64 = e.parse().unwrap();
                tflops.is_some_and(|t| rel_diff(t, want) <= 0.005)
            }
        };
        if !ok {
            failures.push(format!(
                "{raw} / {dtype}: expected {expect}, got {tflops:?} ({:?})",
                got.device
            ));
        }
    }
    assert!(n >= 50, "only {n} cases read");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// One row of `tests/data/device_names.csv`: a name as some tool prints it, a precision spelling, the
/// entry it must resolve to (`unknown`: none) and its dense TFLOP/s (empty: null for that precision).
#[derive(Debug, serde::Deserialize)]
struct NameCase {
    name: String,
    dtype: String,
    device: String,
    tflops: Option<f64>,
}

fn repository_cases() -> Vec<NameCase> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/device_names.csv");
    csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .from_path(path)
        .unwrap()
        .deserialize()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn every_repository_device_case_holds() {
    let resolver = Resolver::builtin();
    let cases = repository_cases();
    assert!(cases.len() >= 75, "only {} cases read", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let got = resolver.resolve(Some(&case.name), Some(&case.dtype));
        let device = got.device.as_deref().unwrap_or("unknown");
        let tflops = got.peak.map(|p| p / 1e12);
        let same_peak = match (tflops, case.tflops) {
            (None, None) => true,
            (Some(t), Some(want)) => rel_diff(t, want) <= 1e-9,
            _ => false,
        };
        if device != case.device || !same_peak {
            failures.push(format!(
                "{} / {}: expected {} at {:?} TFLOP/s, got {device} at {tflops:?}",
                case.name, case.dtype, case.device, case.tflops
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_pattern_reaches_its_own_entry() {
    // No entry may be unreachable because an earlier or more general pattern shadows it: each pattern,
    // given as a device name (with '#' as a pod size), must resolve to the entry that owns it.
    let table = PeakTable::builtin();
    let matcher = Matcher::new(&table);
    for entry in table.entries() {
        for pattern in &entry.patterns {
            let name = pattern.as_str().trim_start_matches('!').replace('#', "8");
            match matcher.find(&name) {
                MatchOutcome::Found(f) => assert_eq!(
                    table.entries()[f.entry].name,
                    entry.name,
                    "pattern '{pattern}' of {} resolves elsewhere",
                    entry.name
                ),
                other => panic!(
                    "pattern '{pattern}' of {} does not resolve: {other:?}",
                    entry.name
                ),
            }
        }
    }
}

#[test]
fn collisions_that_other_tools_get_wrong() {
    let resolver = Resolver::builtin();
    let device = |raw: &str| resolver.resolve(Some(raw), Some("bf16")).device;
    let cases: &[(&str, Option<&str>)] = &[
        ("NVIDIA RTX A1000 Laptop GPU", None),
        ("NVIDIA L40S", Some("L40S")),
        ("NVIDIA GH200 480GB", Some("GH200")),
        ("NVIDIA GB200", Some("GB200")),
        ("NVIDIA Corporation GH100 [H200 NVL]", Some("H200 NVL")),
        ("NVIDIA Corporation GH100", None),
        ("NVIDIA A800-SXM4-80GB", Some("A800 SXM4")),
        ("Tesla V100-SXM2-16GB", Some("V100 SXM2")),
        ("Tesla V100-PCIE-32GB", Some("V100 PCIe")),
        ("Tesla V100S-PCIE-32GB", Some("V100S PCIe")),
        ("TPU v6 lite", Some("TPU v6e")),
        ("TPU7x", Some("TPU7x (TensorCore)")),
        ("trn2", Some("Trainium2 (logical core)")),
        ("inf2", Some("Inferentia2 (NeuronCore-v2)")),
        ("GAUDI2", Some("Gaudi2")),
        (
            "Intel(R) Data Center GPU Max 1550",
            Some("Data Center GPU Max 1550"),
        ),
        ("NVIDIA GeForce RTX 5090 D", None),
        ("NVIDIA GeForce RTX 4090 Laptop GPU", None),
        // The Ti is its own card, not the 3090 with a cut-down qualifier.
        ("NVIDIA GeForce RTX 3090 Ti", Some("GeForce RTX 3090 Ti")),
        ("NVIDIA GeForce RTX 3070 Ti", Some("GeForce RTX 3070 Ti")),
        (
            "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
            Some("RTX PRO 6000 Blackwell"),
        ),
    ];
    for (raw, want) in cases {
        assert_eq!(device(raw).as_deref(), *want, "{raw}");
    }
}

/// Words that occur in no pattern and are no cut-down qualifier: "unrelated tokens".
fn unrelated_word() -> impl Strategy<Value = String> {
    let table = PeakTable::builtin();
    let vocabulary: BTreeSet<String> = table
        .entries()
        .iter()
        .flat_map(|e| e.patterns.iter().flat_map(|p| tokenize(p.as_str())))
        .chain(
            mfu::peaks::matcher::CUT_DOWN_QUALIFIERS
                .iter()
                .map(|q| q.to_string()),
        )
        .collect();
    "[a-z]{1,6}".prop_filter("a table word", move |w| !vocabulary.contains(w))
}

proptest! {
    #[test]
    fn arbitrary_strings_never_panic(s in "\\PC{0,40}") {
        let resolver = Resolver::builtin();
        let _ = resolver.resolve(Some(&s), Some(&s));
    }

    #[test]
    fn unrelated_tokens_around_a_name_do_not_change_its_match(
        before in unrelated_word(),
        after in unrelated_word(),
        which in 0usize..6,
    ) {
        let names = [
            "NVIDIA A100-SXM4-80GB",
            "NVIDIA H100 PCIe",
            "NVIDIA L40S",
            "AMD Instinct MI300X",
            "TPU v5 lite",
            "NVIDIA GH200 480GB",
        ];
        let resolver = Resolver::builtin();
        let plain = resolver.resolve(Some(names[which]), Some("bf16"));
        let wrapped = resolver.resolve(Some(&format!("{before} {} {after}", names[which])), Some("bf16"));
        prop_assert!(plain.device.is_some());
        prop_assert_eq!(plain, wrapped);
    }
}

/// The names docs/peaks.md lists under "Entries without a vendor figure": every backticked word in that
/// section's list items (their reasons quote no code).
fn entries_documented_without_vendor_figure() -> BTreeSet<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/peaks.md");
    let text = std::fs::read_to_string(path).unwrap();
    let start = text
        .find("### Entries without a vendor figure")
        .expect("docs/peaks.md has the list of entries without a vendor figure");
    let section = &text[start..];
    let end = section[4..].find("\n#").map_or(section.len(), |i| i + 4);
    let mut names = BTreeSet::new();
    let mut in_item = false;
    for line in section[..end].lines() {
        if line.starts_with("- ") {
            in_item = true;
        } else if !line.starts_with("  ") {
            in_item = false;
        }
        if !in_item {
            continue;
        }
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 1 {
                names.insert(part.to_string());
            }
        }
    }
    names
}

/// Every entry's figure rests on a vendor document, or the entry is in docs/peaks.md's list of those that
/// do not; the list names only entries that exist and have no vendor source.
#[test]
fn every_entry_cites_a_vendor_document_or_is_listed() {
    let listed = entries_documented_without_vendor_figure();
    assert!(listed.len() >= 20, "{listed:?}");
    let table = PeakTable::builtin();
    for name in &listed {
        assert!(
            table.get(name).is_some(),
            "docs/peaks.md lists '{name}', which has no entry"
        );
    }
    let mut with_vendor = 0;
    for e in table.entries() {
        let vendor = mfu::peaks::cites_vendor(&e.source);
        assert!(
            vendor != listed.contains(&e.name),
            "{}: {}",
            e.name,
            if vendor {
                "cites a vendor document but docs/peaks.md lists it as having none"
            } else {
                "cites no vendor document and is not in docs/peaks.md's list"
            }
        );
        with_vendor += usize::from(vendor);
    }
    // The data-centre parts people train on are all vendor-sourced.
    for name in [
        "A100 SXM4",
        "H100 SXM5",
        "H100 PCIe",
        "H200 SXM",
        "B200",
        "GB200",
        "Instinct MI300X",
        "Instinct MI355X",
        "TPU v5p",
        "TPU v6e",
        "Trainium2 (logical core)",
    ] {
        assert!(
            mfu::peaks::cites_vendor(&table.get(name).unwrap().source),
            "{name}"
        );
    }
    assert!(
        with_vendor >= 45,
        "{with_vendor} entries with a vendor source"
    );
}

/// docs/peaks.md states how many of the table's figures rest on a vendor document ("**N of M** figures
/// ... The other K"); the table is counted here the same way, so the sentence cannot go stale.
#[test]
fn documented_vendor_coverage_is_the_tables() {
    let table = PeakTable::builtin();
    let (mut figures, mut vendor) = (0usize, 0usize);
    for e in table.entries() {
        let n = Dtype::ALL.iter().filter(|d| e.peak(**d).is_some()).count();
        figures += n;
        if mfu::peaks::cites_vendor(&e.source) {
            vendor += n;
        }
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/peaks.md");
    let text = std::fs::read_to_string(path).unwrap();
    let stated = format!(
        "**{vendor} of {figures}** figures in the table (device x precision, {:.1}%)",
        100.0 * vendor as f64 / figures as f64
    );
    assert!(text.contains(&stated), "docs/peaks.md should say: {stated}");
    let other = format!("The other {}", figures - vendor);
    assert!(text.contains(&other), "docs/peaks.md should say: {other}");
    assert!(vendor * 10 >= figures * 6, "{vendor} of {figures}");
}
