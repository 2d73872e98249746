//! `mfu lookup`: resolve device names and explain the match.

use std::io::Write;
use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use mfu::peaks::{cited_in, normalize, Dtype, MatchOutcome, NoMatch, Resolver, Source};

use super::{tflops_text, PeakTableArgs};

/// Resolve device names to table entries and peaks, and say why.
///
/// For each NAME: the entry that matched, its form factor, the dense peak for the precision (every
/// precision when none is given), the source with the documents its keys name, and which tokens matched
/// which pattern. When nothing
/// matches, the closest entries are suggested. Exit status: 0 when every name resolved (and, with
/// --dtype, has a rate for it), 1 otherwise.
///
/// Examples:
///   mfu lookup "NVIDIA H100 80GB HBM3"
///   mfu lookup --dtype bf16 "NVIDIA A100-SXM4-80GB" "NVIDIA GeForce RTX 5090 D"
///   mfu lookup --json --dtype torch.bfloat16 "TPU v5 lite"
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct LookupArgs {
    /// Device names as frameworks print them (torch.cuda.get_device_name, JAX device_kind, lspci, ...).
    #[arg(required = true, value_name = "NAME")]
    pub names: Vec<String>,

    /// The precision to report (fp64, fp32, tf32, bf16, fp16, fp8, int8, fp6, fp4, or a spelling such as
    /// bf16-mixed or nvfp4).
    #[arg(long, value_name = "D")]
    pub dtype: Option<Dtype>,

    /// One JSON object per line: name, dtype, device, peak_flops_per_device, source, documents (what each
    /// source key names).
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub table: PeakTableArgs,
}

#[derive(Debug, Serialize)]
struct LookupLine<'a> {
    name: &'a str,
    dtype: Option<&'static str>,
    device: Option<&'a str>,
    peak_flops_per_device: Option<f64>,
    source: Option<&'a str>,
    documents: Vec<&'static Source>,
}

pub fn run(args: &LookupArgs) -> anyhow::Result<ExitCode> {
    let resolver = args.table.resolver(None)?;
    let mut out = std::io::stdout().lock();
    let mut all_resolved = true;
    let dtypes: Vec<Dtype> = match args.dtype {
        Some(d) => vec![d],
        None => Dtype::ALL.to_vec(),
    };
    for name in &args.names {
        let outcome = resolver.matcher().find(name);
        let entry = match &outcome {
            MatchOutcome::Found(f) => Some(&resolver.table().entries()[f.entry]),
            MatchOutcome::NotFound(_) => None,
        };
        let peak_of = |d: Dtype| {
            resolver
                .options()
                .forced_peak
                .or_else(|| entry.and_then(|e| e.peak(d)))
        };
        let resolved = entry.is_some() && (args.dtype.is_none() || peak_of(dtypes[0]).is_some());
        all_resolved &= resolved || resolver.options().forced_peak.is_some();

        if args.json {
            for &d in &dtypes {
                let line = LookupLine {
                    name,
                    dtype: Some(d.as_str()),
                    device: entry.map(|e| e.name.as_str()),
                    peak_flops_per_device: peak_of(d),
                    source: match (resolver.options().forced_peak, entry) {
                        (Some(_), _) => Some("--peak-flops"),
                        (None, Some(e)) => Some(e.source.as_str()),
                        (None, None) => None,
                    },
                    documents: match (resolver.options().forced_peak, entry) {
                        (None, Some(e)) => cited_in(&e.source),
                        _ => Vec::new(),
                    },
                };
                serde_json::to_writer(&mut out, &line)?;
                writeln!(out)?;
            }
            continue;
        }
        writeln!(out, "{name}")?;
        match &outcome {
            MatchOutcome::Found(f) => {
                let e = &resolver.table().entries()[f.entry];
                writeln!(
                    out,
                    "  device:   {} ({}, {})",
                    e.name, e.vendor, e.form_factor
                )?;
                let tokens = f
                    .matched_tokens
                    .iter()
                    .map(|t| format!("'{t}'"))
                    .collect::<Vec<_>>()
                    .join(" ");
                write!(
                    out,
                    "  matched:  {tokens} by pattern '{}' ({} token{})",
                    f.pattern,
                    f.matched_tokens.len(),
                    if f.matched_tokens.len() == 1 { "" } else { "s" }
                )?;
                if !f.outranked.is_empty() {
                    let beaten: Vec<String> = f
                        .outranked
                        .iter()
                        .map(|(i, p)| format!("{} ('{p}')", resolver.table().entries()[*i].name))
                        .collect();
                    write!(out, "; more specific than {}", beaten.join(", "))?;
                }
                writeln!(out)?;
                for &d in &dtypes {
                    let value = match peak_of(d) {
                        Some(p) => format!("{} TFLOP/s", tflops_text(p)),
                        None => "none (MFU will be null)".to_string(),
                    };
                    writeln!(out, "  {:<8}  {value}", format!("{d}:"))?;
                }
                if resolver.options().forced_peak.is_some() {
                    writeln!(out, "  source:   --peak-flops (forced for every device)")?;
                } else {
                    writeln!(out, "  source:   {}", e.source)?;
                    for doc in cited_in(&e.source) {
                        writeln!(
                            out,
                            "            {} [{}] = {} ({})",
                            doc.key,
                            doc.kind.as_str(),
                            doc.what,
                            doc.location
                        )?;
                    }
                }
                if !e.note.is_empty() {
                    writeln!(out, "  note:     {}", e.note)?;
                }
            }
            MatchOutcome::NotFound(why) => {
                write_not_found(&mut out, &resolver, name, why)?;
                if let Some(forced) = resolver.options().forced_peak {
                    writeln!(
                        out,
                        "  peak:     {} TFLOP/s (--peak-flops)",
                        tflops_text(forced)
                    )?;
                }
            }
        }
    }
    out.flush()?;
    Ok(if all_resolved {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn write_not_found(
    out: &mut impl Write,
    resolver: &Resolver,
    name: &str,
    why: &NoMatch,
) -> std::io::Result<()> {
    let entries = resolver.table().entries();
    match why {
        NoMatch::Empty => writeln!(out, "  device:   unknown (the name is empty)")?,
        NoMatch::Unmatched => {
            let suggestions = resolver.matcher().suggest(name);
            writeln!(
                out,
                "  device:   unknown: no entry matches the tokens '{}'",
                normalize(name)
            )?;
            if !suggestions.is_empty() {
                let names: Vec<&str> = suggestions.iter().map(|&i| entries[i].name.as_str()).collect();
                writeln!(out, "  closest:  {}", names.join(", "))?;
            }
        }
        NoMatch::CutDown { qualifier, entry } => writeln!(
            out,
            "  device:   unknown: '{qualifier}' marks a cut-down variant of {}, which has no entry of its own",
            entries[*entry].name
        )?,
        NoMatch::Ambiguous { entries: tied } => {
            let names: Vec<&str> = tied.iter().map(|&i| entries[i].name.as_str()).collect();
            writeln!(
                out,
                "  device:   unknown: matches {} equally; name it more fully",
                names.join(" and ")
            )?
        }
    }
    writeln!(
        out,
        "  hint:     add an entry with --peaks FILE, or force a value with --peak-flops F"
    )
}
