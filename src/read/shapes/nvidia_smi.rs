//! An `nvidia-smi` table printed into a console log (many job scripts run it first): the GPUs' names and
//! their count, as facts of the run.
//!
//! The table's GPU lines are `|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off | ...`
//! (index, name, persistence mode, then the bus id). Only the first table is read: a log with one table
//! per machine repeats the same GPUs, and its count is one machine's, which `-v` says. nvidia-smi cuts
//! names longer than its column with `...`; such a name is kept as printed (the peak matcher explains what
//! it makes of it).

use crate::columns::{Field, RunFact};

/// The GPU names of the first `nvidia-smi` table in `text`, with the line of its header (from 1).
fn first_table(text: &str) -> Option<(Vec<String>, usize)> {
    let mut header = None;
    let mut names = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if header.is_none() {
            if line.contains("NVIDIA-SMI") && line.contains("Driver Version") {
                header = Some(index + 1);
            }
            continue;
        }
        let t = line.trim();
        if t.starts_with("| Processes") || (t.is_empty() && !names.is_empty()) {
            break;
        }
        if let Some(name) = gpu_name(t) {
            names.push(name);
        }
    }
    let header = header?;
    (!names.is_empty()).then_some((names, header))
}

/// The name on a GPU line: `|   0  NAME   On  |` (persistence mode On or Off).
fn gpu_name(line: &str) -> Option<String> {
    let inner = line.strip_prefix('|')?;
    let (first, _) = inner.split_once('|')?;
    let first = first.trim();
    let (index, rest) = first.split_once(char::is_whitespace)?;
    index.parse::<u32>().ok()?;
    let rest = rest.trim();
    let name = rest
        .strip_suffix("On")
        .or_else(|| rest.strip_suffix("Off"))?
        .trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// The device name (one, or one per GPU joined with `;` when they differ) and count an `nvidia-smi`
/// table in `text` gives.
pub fn facts(text: &str) -> Vec<RunFact> {
    let Some((names, line)) = first_table(text) else {
        return Vec::new();
    };
    let device = if names.iter().all(|n| *n == names[0]) {
        names[0].clone()
    } else {
        names.join(";")
    };
    vec![
        RunFact::text(
            Field::DeviceName,
            device,
            format!("the nvidia-smi table at line {line}"),
        ),
        RunFact::number(
            Field::NumDevices,
            names.len() as f64,
            format!("the nvidia-smi table at line {line} (the GPUs of one machine; give --num-devices for a run on several)"),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|=========================================+========================+======================|
|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |
| N/A   32C    P0             70W /  700W |       1MiB /  81559MiB |      0%      Default |
+-----------------------------------------+------------------------+----------------------+
|   1  NVIDIA H100 80GB HBM3          On  |   00000000:2A:00.0 Off |                    0 |
| N/A   30C    P0             69W /  700W |       1MiB /  81559MiB |      0%      Default |
+-----------------------------------------+------------------------+----------------------+

+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
";

    #[test]
    fn names_and_count_of_the_first_table() {
        let text = format!("job starts\n{TABLE}\n{TABLE}iteration 1\n");
        let facts = facts(&text);
        assert_eq!(
            facts[0],
            RunFact::text(
                Field::DeviceName,
                "NVIDIA H100 80GB HBM3",
                "the nvidia-smi table at line 3"
            )
        );
        assert_eq!(facts[1].value, crate::columns::FactValue::Number(2.0));
        assert_eq!(
            gpu_name("|   3  Tesla V100-SXM2-16GB           Off | 00000000:00:1E.0 Off |"),
            Some("Tesla V100-SXM2-16GB".into())
        );
        assert_eq!(gpu_name("| N/A   32C    P0    70W /  700W |"), None);
        assert!(super::facts("no table here").is_empty());
    }
}
