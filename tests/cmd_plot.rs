//! `mfu plot`: a valid SVG (parsed) and PNG (decoded), one series per run.

use predicates::prelude::*;

use crate::util::{fixtures, Workdir};

#[test]
fn svg_has_one_line_per_run_and_labelled_axes() {
    let wd = Workdir::new("plot_svg");
    wd.mfu()
        .arg("plot")
        .arg(fixtures().join("runs.jsonl"))
        .args(["-o", "mfu.svg"])
        .assert()
        .success();
    let text = std::fs::read_to_string(wd.path("mfu.svg")).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("valid XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    // Two runs have MFU values; the unknown device's run has none.
    let lines = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "polyline")
        .filter(|n| {
            n.attribute("points")
                .is_some_and(|p| p.split_whitespace().count() == 5)
        })
        .count();
    assert_eq!(lines, 2, "one 5-point line per run with MFU");
    let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
    let all = texts.join("\n");
    assert!(all.contains("MFU (wall clock) by step"), "{all}");
    assert!(all.contains("MFU, % of dense peak"));
    assert!(all.contains("step"));
    assert!(all.contains("llama-7b-h100 (H100 SXM5)"));
    assert!(all.contains("llama-7b-a100 (A100 SXM4)"));
    assert!(all.contains("gpt-1b-acme (unknown device) - no values"));
    assert_eq!(wd.listing(), vec!["mfu.svg"], "no temporary file is left");
}

#[test]
fn png_decodes_and_draws_each_run_in_its_colour() {
    let wd = Workdir::new("plot_png");
    wd.mfu()
        .arg("plot")
        .arg(fixtures().join("summary_runs.csv"))
        .args([
            "-o",
            "tps.png",
            "--metric",
            "tokens_per_second",
            "--width",
            "800",
            "--height",
            "500",
        ])
        .assert()
        .success();
    let decoder = png::Decoder::new(std::fs::File::open(wd.path("tps.png")).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (800, 500));
    let px = info.color_type.samples();
    let has = |rgb: [u8; 3]| buf.chunks(px).any(|p| p[..3] == rgb);
    // Throughput is known for both runs, so both palette colours appear.
    assert!(has([31, 119, 180]), "first run's line");
    assert!(has([255, 127, 14]), "second run's line");
}

#[test]
fn refuses_unknown_extensions_and_existing_files() {
    let wd = Workdir::new("plot_errors");
    wd.mfu()
        .arg("plot")
        .arg(fixtures().join("runs.jsonl"))
        .args(["-o", "mfu.gif"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("must be a .svg or .png"));
    wd.create("mfu.svg", "keep");
    wd.mfu()
        .arg("plot")
        .arg(fixtures().join("runs.jsonl"))
        .args(["-o", "mfu.svg"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("already exists"));
    assert_eq!(std::fs::read_to_string(wd.path("mfu.svg")).unwrap(), "keep");
}
