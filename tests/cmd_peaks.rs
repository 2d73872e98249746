//! `mfu peaks`: filtering and the three formats.

use serde_json::Value;

use crate::util::OkStdout;
use crate::util::Workdir;

#[test]
fn csv_lists_rows_per_device_and_dtype() {
    let wd = Workdir::new("peaks_csv");
    let out = wd
        .mfu()
        .args([
            "peaks", "--format", "csv", "--vendor", "nvidia", "--dtype", "bf16",
        ])
        .ok_stdout();
    let mut reader = csv::Reader::from_reader(out.as_slice());
    assert_eq!(
        reader.headers().unwrap().iter().collect::<Vec<_>>(),
        [
            "vendor",
            "device",
            "form_factor",
            "dtype",
            "peak_flops",
            "source",
            "source_kind"
        ]
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert!(rows.iter().all(|r| &r[0] == "NVIDIA" && &r[3] == "bf16"));
    // T4 and V100 have no bf16 rate, so they are absent rather than given a neighbour's.
    assert!(!rows
        .iter()
        .any(|r| &r[1] == "T4" || r[1].starts_with("V100")));
    let h100 = rows.iter().find(|r| &r[1] == "H100 SXM5").unwrap();
    assert_eq!(h100[4].parse::<f64>().unwrap(), 989.4e12);
    // Each row says what kind of document backs it: the H100's datasheet, other projects' tables for
    // the A800, whose datasheet was not read.
    assert_eq!(&h100[6], "vendor");
    let a800 = rows.iter().find(|r| &r[1] == "A800 SXM4").unwrap();
    assert_eq!(&a800[6], "project");
    let counts = |kind: &str| rows.iter().filter(|r| &r[6] == kind).count();
    assert!(counts("vendor") > counts("project") + counts("secondary"));
}

#[test]
fn json_and_table_formats() {
    let wd = Workdir::new("peaks_json");
    let out = wd
        .mfu()
        .args(["peaks", "--format", "json", "--vendor", "Google"])
        .ok_stdout();
    let rows: Vec<Value> = serde_json::from_slice(&out).unwrap();
    assert!(rows.iter().all(|r| r["vendor"] == "Google"));
    let v5e = rows
        .iter()
        .find(|r| r["device"] == "TPU v5e" && r["dtype"] == "bf16")
        .unwrap();
    assert_eq!(v5e["peak_flops"].as_f64(), Some(197e12));
    assert_eq!(v5e["source_kind"], "vendor");
    assert!(
        !rows.iter().any(|r| r["dtype"] == "fp32"),
        "TPUs publish no fp32 rate"
    );

    let out = wd
        .mfu()
        .args([
            "peaks", "--format", "table", "--dtype", "fp8", "--vendor", "amd",
        ])
        .ok_stdout();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("vendor  device"));
    assert!(lines
        .iter()
        .any(|l| l.contains("Instinct MI300X") && l.contains("2614.9") && l.contains("vendor")));
    // Right-aligned numbers: every TFLOP/s value ends in the same column.
    let ends: BTreeSet<usize> = lines[1..]
        .iter()
        .map(|l| l.find(" fp8 ").unwrap())
        .collect();
    assert_eq!(ends.len(), 1, "{text}");
}

use std::collections::BTreeSet;

#[test]
fn sources_lists_the_legend_of_every_key_the_table_cites() {
    let wd = Workdir::new("peaks_sources");
    let out = wd
        .mfu()
        .args(["peaks", "--sources", "--format", "json"])
        .ok_stdout();
    let legend: Vec<Value> = serde_json::from_slice(&out).unwrap();
    let keys: Vec<&str> = legend.iter().map(|s| s["key"].as_str().unwrap()).collect();
    // Every S_* key in the table's source column has a line.
    let table = wd.mfu().args(["peaks", "--format", "csv"]).ok_stdout();
    let table = String::from_utf8(table).unwrap();
    let cited: std::collections::BTreeSet<&str> = table
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("S_") || w.starts_with("V_"))
        .collect();
    assert!(cited.len() >= 40, "{cited:?}");
    for key in cited {
        assert!(keys.contains(&key), "{key} has no legend line");
    }
    let tt = legend.iter().find(|s| s["key"] == "S_TT").unwrap();
    assert!(tt["where"].as_str().unwrap().contains("pytorch/torchtitan"));
    // Each line says what kind of document it is: the vendor's own, another project's table, ...
    let kind = |key: &str| legend.iter().find(|s| s["key"] == key).unwrap()["kind"].clone();
    assert_eq!(kind("S_TT"), "project");
    assert_eq!(kind("S_GT"), "vendor");
    assert_eq!(kind("V_NV_H100"), "vendor");
    assert_eq!(kind("S_ZZ"), "measurement");
    assert!(legend
        .iter()
        .all(|s| ["vendor", "secondary", "project", "measurement"]
            .contains(&s["kind"].as_str().unwrap())));
    let table = wd
        .mfu()
        .args(["peaks", "--sources", "--format", "table"])
        .ok_stdout();
    let header = String::from_utf8(table).unwrap();
    assert!(header.starts_with("key"), "{header}");
    assert!(
        header.lines().next().unwrap().contains(" kind "),
        "{header}"
    );
    // --sources is a listing of its own: filters of the table do not apply.
    wd.mfu()
        .args(["peaks", "--sources", "--dtype", "bf16"])
        .assert()
        .code(2);
}
