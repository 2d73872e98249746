//! `mfu lookup`: explanations, JSON lines, exit codes.

use predicates::prelude::*;
use serde_json::Value;

use crate::util::OkStdout;
use crate::util::Workdir;

#[test]
fn explains_a_match_and_exits_zero() {
    let wd = Workdir::new("lookup_explain");
    wd.mfu()
        .args(["lookup", "--dtype", "bf16", "NVIDIA H100 PCIe"])
        .assert()
        .success()
        .stdout(predicate::str::contains("device:   H100 PCIe (NVIDIA"))
        .stdout(predicate::str::contains(
            "by pattern 'h100 pcie' (2 tokens)",
        ))
        .stdout(predicate::str::contains("more specific than H100 SXM5"))
        .stdout(predicate::str::contains("bf16:     756 TFLOP/s"));
}

#[test]
fn unknown_name_suggests_and_exits_one() {
    let wd = Workdir::new("lookup_unknown");
    wd.mfu()
        .args(["lookup", "NVIDIA H1000", "NVIDIA H100"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("unknown: no entry matches"))
        .stdout(predicate::str::contains("closest:  H100 SXM5"))
        .stdout(predicate::str::contains("--peaks FILE"));
}

#[test]
fn json_lines_have_exactly_the_contract_keys() {
    let wd = Workdir::new("lookup_json");
    let out = wd
        .mfu()
        .args([
            "lookup",
            "--json",
            "--dtype",
            "torch.bfloat16",
            "TPU v5 lite",
            "Tesla T4",
            "Acme Tensor Engine X9",
        ])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let lines: Vec<Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    for line in &lines {
        let mut keys: Vec<&str> = line
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "device",
                "documents",
                "dtype",
                "name",
                "peak_flops_per_device",
                "source"
            ]
        );
        assert_eq!(line["dtype"], "bf16");
    }
    assert_eq!(lines[0]["device"], "TPU v5e");
    // The source keys the entry cites, named: S_GT is Google's TPU documentation.
    let documents = lines[0]["documents"].as_array().unwrap();
    assert_eq!(documents[0]["key"], "S_GT");
    assert!(documents[0]["what"]
        .as_str()
        .unwrap()
        .contains("Google Cloud TPU docs"));
    assert_eq!(documents[0]["kind"], "vendor");
    assert!(lines[2]["documents"].as_array().unwrap().is_empty());
    // T4's vendor documents (its datasheet, then the whitepapers that tabulate it) come before the project
    // tables its source cell also cites.
    let t4 = lines[1]["documents"].as_array().unwrap();
    let kinds: Vec<&str> = t4.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(t4[0]["key"], "V_NV_T4");
    assert_eq!(t4[1]["key"], "V_NV_TURING_WP");
    assert_eq!(kinds[..3], ["vendor"; 3], "{kinds:?}");
    assert!(kinds[3..].iter().all(|k| *k != "vendor"), "{kinds:?}");
    assert_eq!(lines[0]["peak_flops_per_device"].as_f64(), Some(197e12));
    // T4 is known but has no bf16 rate: the device is named, the peak is null.
    assert_eq!(lines[1]["device"], "T4");
    assert!(lines[1]["peak_flops_per_device"].is_null());
    assert!(lines[2]["device"].is_null());
    assert!(lines[2]["peak_flops_per_device"].is_null());
}

#[test]
fn without_dtype_every_precision_is_listed() {
    let wd = Workdir::new("lookup_all");
    let out = wd
        .mfu()
        .args(["lookup", "--json", "NVIDIA A100-SXM4-80GB"])
        .ok_stdout();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let dtypes: Vec<&str> = lines.iter().map(|l| l["dtype"].as_str().unwrap()).collect();
    assert_eq!(
        dtypes,
        ["fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp6", "fp4"]
    );
    assert_eq!(lines[2]["peak_flops_per_device"].as_f64(), Some(156e12));
    assert!(
        lines[5]["peak_flops_per_device"].is_null(),
        "A100 has no fp8"
    );
}

#[test]
fn user_peaks_file_adds_and_replaces_entries() {
    let wd = Workdir::new("lookup_user_peaks");
    wd.create(
        "mine.csv",
        "vendor,name,form_factor,patterns,fp64_tflops,fp32_tflops,tf32_tflops,bf16_tflops,fp16_tflops,fp8_tflops,int8_tflops,source,note\n\
         Acme,Acme X9,card,acme x9|x9,,,,100,,,,Acme sheet,\n\
         NVIDIA,L4,PCIe,l4,,,,110,,,,our measurement,\n",
    );
    let out = wd
        .mfu()
        .args([
            "lookup",
            "--json",
            "--dtype",
            "bf16",
            "--peaks",
            "mine.csv",
            "Acme Tensor Engine X9",
            "NVIDIA L4",
        ])
        .ok_stdout();
    let lines: Vec<Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["device"], "Acme X9");
    assert_eq!(lines[0]["peak_flops_per_device"].as_f64(), Some(100e12));
    assert_eq!(lines[1]["peak_flops_per_device"].as_f64(), Some(110e12));
    assert_eq!(lines[1]["source"], "our measurement");
}

#[test]
fn bad_peaks_file_and_bad_flags() {
    let wd = Workdir::new("lookup_bad");
    wd.create(
        "bad.csv",
        "vendor,name,form_factor,patterns,fp64_tflops,fp32_tflops,tf32_tflops,bf16_tflops,fp16_tflops,fp8_tflops,int8_tflops,source,note\n\
         Acme,Acme X9,card,x9,,,,fast,,,,s,\n",
    );
    wd.mfu()
        .args(["lookup", "--peaks", "bad.csv", "x9"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("bad.csv: line 2"))
        .stderr(predicate::str::contains("bf16_tflops"));
    wd.mfu()
        .args(["lookup", "--dtype", "bf17", "x9"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("'bf17'"));
    wd.mfu().args(["lookup"]).assert().code(2);
    wd.mfu()
        .args(["lookup", "--peak-flops", "-5", "x"])
        .assert()
        .code(2);
}

#[test]
fn forced_peak_resolves_every_name() {
    let wd = Workdir::new("lookup_forced");
    wd.mfu()
        .args([
            "lookup",
            "--json",
            "--dtype",
            "bf16",
            "--peak-flops",
            "5e14",
            "Acme X9",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "\"peak_flops_per_device\":500000000000000.0",
        ))
        .stdout(predicate::str::contains("\"source\":\"--peak-flops\""));
}

/// A bare "Ascend910" is a 910A or a 910B of some bin, whose peaks differ by half: unknown, with the
/// candidates named. "H100 ... HBM2e" is the PCIe card.
#[test]
fn ascend910_stays_unknown_with_candidates_and_hbm2e_is_the_pcie_h100() {
    let wd = Workdir::new("lookup_ascend");
    let out = wd
        .mfu()
        .args(["lookup", "--dtype", "bf16", "Ascend910"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("device:   unknown"), "{text}");
    let closest = text.lines().find(|l| l.contains("closest:")).unwrap();
    assert!(
        closest.contains("Ascend 910A") && closest.contains("Ascend 910B"),
        "{closest}"
    );
    let out = wd
        .mfu()
        .args([
            "lookup",
            "--dtype",
            "fp32",
            "--json",
            "NVIDIA H100 80GB HBM2e",
        ])
        .ok_stdout();
    let line: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(line["device"], "H100 PCIe");
    assert_eq!(line["peak_flops_per_device"].as_f64(), Some(51.2e12));
    assert_eq!(line["documents"][0]["key"], "V_NV_H100");
}
