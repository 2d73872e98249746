//! `mfu peaks`: list the peak table, one row per device and precision that has a published rate.

use std::io::Write;
use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use mfu::peaks::{legend, source_kind, Dtype};

use super::{aligned_table, list_format_or_default, tflops_text, ListFormat, PeakTableArgs};

/// List the dense peak FLOP/s table.
///
/// One row per device and precision that has a published dense rate, with its source and the kind of the
/// best document that source cites (source_kind: vendor, secondary, project or measurement; empty for a
/// source that cites no legend key). Precisions a device lacks (bf16 on a T4 or V100) are absent: MFU for
/// them is null. With --sources, the legend of the source
/// keys instead: what kind of document each is (vendor, secondary, project, measurement), what it is and
/// where it was read.
///
/// Examples:
///   mfu peaks --vendor nvidia --dtype bf16
///   mfu peaks --format csv | grep -v ',vendor$'    # figures no vendor document backs
///   mfu peaks --sources
///   mfu peaks --format json | jq '.[] | select(.device == "H100 SXM5")'
///   mfu peaks --peaks my_cluster.csv --format csv > peaks.csv
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct PeaksArgs {
    /// Only this vendor (NVIDIA, AMD, Google, AWS, Intel; case-insensitive).
    #[arg(long, value_name = "V")]
    pub vendor: Option<String>,

    /// Only this precision (fp64, fp32, tf32, bf16, fp16, fp8, int8, fp6, fp4, or a spelling such as
    /// torch.bfloat16 or nvfp4).
    #[arg(long, value_name = "D")]
    pub dtype: Option<Dtype>,

    /// List the source keys the table cites (S_TT, S_LI, ...) with the document each names.
    #[arg(long, conflicts_with_all = ["vendor", "dtype"])]
    pub sources: bool,

    /// Output format; default: table on a terminal, csv otherwise.
    #[arg(long, value_enum)]
    pub format: Option<ListFormat>,

    #[command(flatten)]
    pub table: PeakTableArgs,
}

#[derive(Debug, Serialize)]
struct PeakRow<'a> {
    vendor: &'a str,
    device: &'a str,
    form_factor: &'a str,
    dtype: &'static str,
    /// FLOP/s.
    peak_flops: f64,
    source: &'a str,
    /// The kind of the best document `source` cites; `None` when it cites no legend key.
    source_kind: Option<&'static str>,
}

pub fn run(args: &PeaksArgs) -> anyhow::Result<ExitCode> {
    if args.sources {
        return sources(args.format);
    }
    let table = args.table.table()?;
    let dtypes: Vec<Dtype> = match args.dtype {
        Some(d) => vec![d],
        None => Dtype::ALL.to_vec(),
    };
    let rows: Vec<PeakRow> = table
        .entries()
        .iter()
        .filter(|e| {
            args.vendor
                .as_ref()
                .is_none_or(|v| e.vendor.eq_ignore_ascii_case(v))
        })
        .flat_map(|e| {
            dtypes.iter().filter_map(move |&d| {
                e.peak(d).map(|p| PeakRow {
                    vendor: &e.vendor,
                    device: &e.name,
                    form_factor: &e.form_factor,
                    dtype: d.as_str(),
                    peak_flops: p,
                    source: &e.source,
                    source_kind: source_kind(&e.source).map(|k| k.as_str()),
                })
            })
        })
        .collect();

    let mut out = std::io::stdout().lock();
    match list_format_or_default(args.format) {
        ListFormat::Table => {
            let cells: Vec<Vec<String>> = rows
                .iter()
                .map(|r| {
                    vec![
                        r.vendor.to_string(),
                        r.device.to_string(),
                        r.dtype.to_string(),
                        tflops_text(r.peak_flops),
                        r.source_kind.unwrap_or("-").to_string(),
                        r.form_factor.to_string(),
                    ]
                })
                .collect();
            let text = aligned_table(
                &[
                    "vendor",
                    "device",
                    "dtype",
                    "TFLOP/s",
                    "source",
                    "form factor",
                ],
                &cells,
            );
            out.write_all(text.as_bytes())?;
        }
        ListFormat::Csv => {
            let mut w = csv::Writer::from_writer(&mut out);
            for r in &rows {
                w.serialize(r)?;
            }
            if rows.is_empty() {
                w.write_record([
                    "vendor",
                    "device",
                    "form_factor",
                    "dtype",
                    "peak_flops",
                    "source",
                    "source_kind",
                ])?;
            }
            w.flush()?;
        }
        ListFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &rows)?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `mfu peaks --sources`: the legend of the source keys.
fn sources(format: Option<ListFormat>) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    match list_format_or_default(format) {
        ListFormat::Table => {
            let cells: Vec<Vec<String>> = legend()
                .iter()
                .map(|s| {
                    vec![
                        s.key.clone(),
                        s.kind.as_str().to_string(),
                        s.what.clone(),
                        s.location.clone(),
                    ]
                })
                .collect();
            out.write_all(aligned_table(&["key", "kind", "what", "where"], &cells).as_bytes())?;
        }
        ListFormat::Csv => {
            let mut w = csv::Writer::from_writer(&mut out);
            for s in legend() {
                w.serialize(s)?;
            }
            w.flush()?;
        }
        ListFormat::Json => {
            serde_json::to_writer_pretty(&mut out, legend())?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
