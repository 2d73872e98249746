//! Each framework's peak lookup, ported line for line from its code at the commit `mfu audit` names
//! (`src/audit/lookups.rs`), held against mfu's emulation of it, which is data (a chain of rules and a
//! table), over every device name the project has: tests/data/device_names.csv,
//! ../shared/reference/device_cases.csv where present, each framework's own names and the traps.

use mfu::audit::lookups::{self, Lookup};
use mfu::peaks::precision::Dtype;

/// pytorch/torchtitan `torchtitan/tools/utils.py` `get_peak_flops` @ b5bcd76, after its `lspci`
/// override (which needs the machine). `None` where it reads device properties at run time.
fn torchtitan(device_name: &str) -> Option<f64> {
    let d = device_name;
    if d.contains("A100") {
        Some(312e12)
    } else if d.contains("A6000") {
        Some(154.85e12)
    } else if d.contains("H100") {
        if d.contains("NVL") {
            Some(835e12)
        } else if d.contains("PCIe") {
            Some(756e12)
        } else {
            Some(989e12)
        }
    } else if d.contains("H200") {
        Some(989e12)
    } else if d.contains("H20") {
        Some(148e12)
    } else if d.contains("GB200") || d.contains("GB300") {
        Some(2.5e15)
    } else if d.contains("B300") || d.contains("B200") {
        Some(2.25e15)
    } else if d.contains("MI355X") {
        Some(2500e12)
    } else if d.contains("MI300X") || d.contains("MI325X") {
        Some(1300e12)
    } else if d.contains("MI250X") {
        Some(191.5e12)
    } else if d.contains("Data Center GPU Max 1550") {
        None // 512 * max_compute_units * 1300 MHz
    } else if d.contains("l40s") {
        Some(362e12)
    } else if d.contains("neuron") {
        None // torch.neuron device properties
    } else if d.starts_with("TPU") {
        if d.contains("v4") {
            Some(275e12)
        } else if d.contains("v5e") {
            Some(197e12)
        } else if d.contains("v5p") {
            Some(459e12)
        } else if d.contains("v6e") {
            Some(918e12)
        } else if d.contains("v7") {
            Some(2307e12 / 2.0)
        } else {
            Some(312e12)
        }
    } else {
        Some(312e12)
    }
}

/// volcengine/verl `verl/utils/flops_counter.py` `get_device_flops` @ b178a3c: `_DEVICE_FLOPS` walked
/// in `sorted(..., reverse=True)` order; unknown devices get infinity (`None` here).
fn verl(device_name: &str) -> Option<f64> {
    let mut table = vec![
        ("CPU", 448e9),
        ("GB200", 2.5e15),
        ("B200", 2.25e15),
        ("MI300X", 1336e12),
        ("H100", 989e12),
        ("H800", 989e12),
        ("H200", 989e12),
        ("A100", 312e12),
        ("A800", 312e12),
        ("L40S", 362.05e12),
        ("L40", 181.05e12),
        ("A40", 149.7e12),
        ("L20", 119.5e12),
        ("H20", 148e12),
        ("910B", 354e12),
        ("Ascend910", 354e12),
        ("RTX 3070 Ti", 21.75e12),
    ];
    // Python sorts the (key, value) tuples: by key, byte order for ASCII.
    table.sort_by(|a, b| b.0.cmp(a.0));
    for (key, value) in table {
        if device_name.contains(key) {
            return Some(value);
        }
    }
    None
}

/// Lightning-AI/pytorch-lightning `get_available_flops` @ 2.6.5 (be98784), CUDA branch: the key it
/// makes of the name (then looked up in `_CUDA_FLOPS`), `None` where it warns and returns.
fn lightning_key(device_name: &str) -> Option<String> {
    let mut chip = device_name.to_lowercase();
    if chip.contains("h200") {
        if chip.contains("sxm1") {
            chip = "h200 sxm1".into();
        } else if chip.contains("nvl1") {
            chip = "h200 nvl1".into();
        }
    } else if chip.contains("h100") {
        if chip.contains("hbm3") {
            chip = "h100 sxm".into();
        } else if chip.contains("nvl") {
            chip = "h100 nvl".into();
        } else if chip.contains("pcie") || chip.contains("hbm2e") {
            chip = "h100 pcie".into();
        }
    } else if chip.contains("l4") {
        chip = if chip.contains("tesla") { "l40" } else { "l4" }.into();
    } else if chip.contains("geforce rtx") {
        let number = chip.split(' ').nth(3)?.to_string(); // an IndexError in Python
        let extra = if chip.contains("super") {
            " super"
        } else if chip.contains("ti") {
            " ti"
        } else {
            ""
        };
        chip = format!("rtx {number}{extra}");
    } else if chip.contains("a6000") {
        chip = "a6000".into();
    } else if chip.contains("a100") {
        chip = "a100".into();
    } else if chip.contains("a40") {
        chip = "a40".into();
    } else if chip.contains("a10g") {
        chip = "a10g".into();
    } else if chip.contains("t4") {
        chip = "t4".into();
    } else if chip.contains("quadro rtx 5000") {
        chip = "quadro rtx 5000".into();
    } else if chip.contains("titan rtx") {
        chip = "titan rtx".into();
    } else if chip.contains("v100-sxm") {
        chip = "v100 sxm".into();
    } else if chip.contains("v100-pcie") {
        chip = "v100 pcie".into();
    } else if chip.contains("v100s-pcie") {
        chip = "v100s pcie".into();
    } else {
        return None;
    }
    Some(chip)
}

/// mosaicml/composer `get_gpu_flops_available` @ 6405188: the key it makes (the lower-cased name where
/// no branch matches).
fn composer_key(device_name: &str) -> String {
    let d = device_name.to_lowercase();
    if d.contains("h200") {
        "h200-sxm".into()
    } else if d.contains("h100") && d.contains("hbm3") {
        "h100-sxm".into()
    } else if d.contains("h100") && (d.contains("pcie") || d.contains("hbm2e")) {
        "h100-pcie".into()
    } else if d.contains("a100") {
        "a100".into()
    } else if d.contains("a10") {
        "a10".into()
    } else if d.contains("v100-sxm") {
        "v100-sxm".into()
    } else if d.contains("v100-pcie") {
        "v100-pcie".into()
    } else if d.contains("t4") {
        "t4".into()
    } else {
        d
    }
}

/// allenai/OLMo-core `SpeedMonitorCallback.pre_train` @ fa6c501, a BF16 run.
fn olmo_core(device_name: &str) -> Option<f64> {
    let dense_correction: f64 = 0.5;
    Some(if device_name.contains("H100") {
        if device_name.contains("NVL") {
            (1671e12 * dense_correction).trunc()
        } else if device_name.contains("PCIe") {
            (1513e12 * dense_correction).trunc()
        } else {
            (1979e12 * dense_correction).trunc()
        }
    } else if device_name.contains("B200") {
        (4.5e15 * dense_correction).trunc()
    } else {
        (624e12 * dense_correction).trunc()
    })
}

/// karpathy/llm.c `get_flops_promised` @ f1e2ace at BF16: `strcmp` over `gpu_db`, in f32.
fn llmc_bf16(device: &str) -> Option<f64> {
    // (bf16_32, cores, clock) of VOLTA, AMPERE_DATACENTER, AMPERE_CONSUMER, HOPPER, ADA.
    let volta = (-1.0f32, 640.0f32, 1530.0f32);
    let ampere_dc = (312.0, 432.0, 1410.0);
    let ampere_c = (80.0, 336.0, 1860.0);
    let hopper = (756.0, 456.0, 1620.0);
    let ada = (165.2, 512.0, 2520.0);
    let gpu_db = [
        ("Tesla V100-SXM2-16GB", volta, 640.0, 1530.0),
        ("Tesla V100-PCIE-32GB", volta, 640.0, 1530.0),
        ("NVIDIA A100-PCIE-40GB", ampere_dc, 432.0, 1410.0),
        ("NVIDIA A100-PCIE-80GB", ampere_dc, 432.0, 1410.0),
        ("NVIDIA A100-SXM4-40GB", ampere_dc, 432.0, 1410.0),
        ("NVIDIA A100-SXM4-80GB", ampere_dc, 432.0, 1410.0),
        ("NVIDIA RTX A2000", ampere_c, 104.0, 1200.0),
        ("NVIDIA RTX A4000", ampere_c, 192.0, 1560.0),
        ("NVIDIA RTX A4500", ampere_c, 224.0, 1650.0),
        ("NVIDIA RTX A5000", ampere_c, 256.0, 1695.0),
        ("NVIDIA RTX A5500", ampere_c, 320.0, 1770.0),
        ("NVIDIA RTX A6000", ampere_c, 336.0, 1800.0),
        ("NVIDIA GeForce RTX 3090 Ti", ampere_c, 336.0, 1860.0),
        ("NVIDIA GeForce RTX 3090", ampere_c, 328.0, 1695.0),
        ("NVIDIA GeForce RTX 3080 Ti", ampere_c, 320.0, 1665.0),
        ("NVIDIA GeForce RTX 3080", ampere_c, 272.0, 1710.0),
        ("NVIDIA GeForce RTX 3070 Ti", ampere_c, 192.0, 1770.0),
        ("NVIDIA GeForce RTX 3070", ampere_c, 184.0, 1725.0),
        ("NVIDIA GeForce RTX 3060 Ti", ampere_c, 152.0, 1665.0),
        ("NVIDIA GeForce RTX 3060", ampere_c, 112.0, 1777.0),
        ("NVIDIA RTX A2000 ADA", ada, 88.0, 2130.0),
        ("NVIDIA RTX A4000 ADA", ada, 192.0, 2175.0),
        ("NVIDIA RTX A4500 ADA", ada, 224.0, 2580.0),
        ("NVIDIA RTX A5000 ADA", ada, 400.0, 2550.0),
        ("NVIDIA RTX A5880 ADA", ada, 440.0, 2460.0),
        ("NVIDIA RTX A6000 ADA", ada, 568.0, 2505.0),
        ("NVIDIA GeForce RTX 4090", ada, 512.0, 2520.0),
        ("NVIDIA GeForce RTX 4080 SUPER", ada, 320.0, 2550.0),
        ("NVIDIA GeForce RTX 4080", ada, 304.0, 2505.0),
        ("NVIDIA GeForce RTX 4070 Ti SUPER", ada, 264.0, 2610.0),
        ("NVIDIA GeForce RTX 4070 Ti", ada, 240.0, 2610.0),
        ("NVIDIA GeForce RTX 4070 SUPER", ada, 224.0, 2475.0),
        ("NVIDIA GeForce RTX 4070", ada, 184.0, 2475.0),
        ("NVIDIA GeForce RTX 4070", ada, 184.0, 2475.0),
        ("NVIDIA GeForce RTX 4060 Ti", ada, 136.0, 2535.0),
        ("NVIDIA GeForce RTX 4060", ada, 96.0, 2460.0),
        ("NVIDIA H100 PCIe", hopper, 456.0, 1620.0),
        ("NVIDIA H100 80GB HBM3", hopper, 528.0, 1830.0),
    ];
    for (name, (value, cores, clock), new_cores, new_mhz) in gpu_db {
        if name == device {
            if value < 0.0 {
                return None;
            }
            let adjusted: f32 = value * (new_cores / cores) * (new_mhz / clock);
            return Some(f64::from(adjusted) * 1e12);
        }
    }
    None
}

/// Every name to try: the project's device names, the frameworks' own, and names each chain is known
/// to trip on.
fn names() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = Vec::new();
    let text = std::fs::read_to_string(root.join("tests/data/device_names.csv")).unwrap();
    for line in text.lines().skip(1).filter(|l| !l.starts_with('#')) {
        let mut fields = line.split(',');
        names.extend(fields.next().map(str::to_string));
        names.extend(fields.nth(1).map(str::to_string));
    }
    if let Ok(text) = std::fs::read_to_string(root.join("../shared/reference/device_cases.csv")) {
        names.extend(
            text.lines()
                .skip(1)
                .filter_map(|l| l.split(',').next().map(str::to_string)),
        );
    }
    names.extend(
        [
            "NVIDIA GeForce RTX 5090",
            "NVIDIA GeForce RTX 4090",
            "NVIDIA GeForce RTX 4080 SUPER",
            "NVIDIA GeForce RTX 3090 Ti",
            "NVIDIA GeForce RTX",
            "NVIDIA L40S",
            "NVIDIA L40",
            "NVIDIA L4",
            "Tesla T4",
            "NVIDIA A10G",
            "NVIDIA A10",
            "NVIDIA RTX A1000",
            "NVIDIA RTX A6000",
            "NVIDIA A40",
            "NVIDIA H200",
            "NVIDIA H200 NVL1",
            "NVIDIA GH200 480GB",
            "NVIDIA H20",
            "NVIDIA H800",
            "NVIDIA H100 NVL",
            "NVIDIA H100 PCIe",
            "NVIDIA H100 80GB HBM3",
            "NVIDIA H100 80GB HBM2e",
            "NVIDIA B200",
            "NVIDIA GB200",
            "Tesla V100-SXM2-32GB",
            "Tesla V100-PCIE-16GB",
            "Tesla V100S-PCIE-32GB",
            "Quadro RTX 5000",
            "NVIDIA TITAN RTX",
            "AMD Instinct MI300X",
            "AMD Instinct MI250X",
            "Intel(R) Data Center GPU Max 1550",
            "TPU v5p",
            "TPU v5 lite",
            "TPU v7x",
            "Ascend910B3",
            "CPU",
            "neuron",
            "",
        ]
        .map(String::from),
    );
    names.sort();
    names.dedup();
    names
}

fn emulated(l: &Lookup, name: &str, dtype: Dtype) -> Option<f64> {
    l.peak(name, Some(dtype)).peak
}

#[test]
fn the_chains_give_what_the_frameworks_code_gives_on_every_name() {
    let names = names();
    assert!(names.len() > 150, "{}", names.len());
    let table = |l: &Lookup, key: &str, dtype: Dtype| {
        let i = lookups::ROW_DTYPES
            .iter()
            .position(|d| *d == dtype)
            .unwrap();
        l.table
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, row)| row[i])
    };
    for name in &names {
        assert_eq!(
            emulated(&lookups::TORCHTITAN, name, Dtype::Bf16),
            torchtitan(name),
            "torchtitan: {name}"
        );
        assert_eq!(
            emulated(&lookups::VERL, name, Dtype::Bf16),
            verl(name),
            "verl: {name}"
        );
        assert_eq!(
            emulated(&lookups::OLMO_CORE, name, Dtype::Bf16),
            olmo_core(name),
            "OLMo-core: {name}"
        );
        assert_eq!(
            emulated(&lookups::LLMC, name, Dtype::Bf16),
            llmc_bf16(name),
            "llm.c: {name}"
        );
        assert_eq!(
            emulated(&lookups::NANOGPT, name, Dtype::Fp32),
            Some(312e12),
            "nanoGPT: {name}"
        );
        // nanochat's first versions: `promised_flops_per_sec_h100 = 989e12`, whatever the device.
        assert_eq!(
            emulated(&lookups::NANOCHAT, name, Dtype::Bf16),
            Some(989e12),
            "nanochat: {name}"
        );
        for dtype in [
            Dtype::Bf16,
            Dtype::Fp16,
            Dtype::Fp32,
            Dtype::Tf32,
            Dtype::Int8,
        ] {
            let port = lightning_key(name).and_then(|k| table(&lookups::LIGHTNING, &k, dtype));
            assert_eq!(
                emulated(&lookups::LIGHTNING, name, dtype),
                port,
                "Lightning: {name} {dtype:?}"
            );
        }
        for dtype in [
            Dtype::Bf16,
            Dtype::Fp16,
            Dtype::Fp32,
            Dtype::Tf32,
            Dtype::Fp8,
        ] {
            let port = table(&lookups::COMPOSER, &composer_key(name), dtype);
            assert_eq!(
                emulated(&lookups::COMPOSER, name, dtype),
                port,
                "Composer: {name} {dtype:?}"
            );
        }
    }
}

#[test]
fn the_traps_named_in_the_issue_are_reproduced() {
    // torchtitan sends an RTX 5090 to the A100; Lightning sends an L40S to the L4; Composer sends an RTX
    // A1000 to the A100; llm.c has no H100 NVL (-100%).
    assert_eq!(torchtitan("NVIDIA GeForce RTX 5090"), Some(312e12));
    assert_eq!(lightning_key("NVIDIA L40S").as_deref(), Some("l4"));
    assert_eq!(composer_key("NVIDIA RTX A1000"), "a100");
    assert_eq!(llmc_bf16("NVIDIA H100 NVL"), None);
    let e = lookups::TORCHTITAN.peak("NVIDIA GeForce RTX 5090", Some(Dtype::Bf16));
    assert!(e.fallback && e.why.contains("fallback to A100"), "{e:?}");
}
