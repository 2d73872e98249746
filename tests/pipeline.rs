//! The pipeline as a library user drives it, without the command line: options in, a report and events
//! back, and the same bytes the `mfu` binary writes.

use std::sync::Mutex;

use mfu::pipeline::destination::OutputOptions;
use mfu::pipeline::job::RunOptions;
use mfu::pipeline::{enrich, Event, Observer, Options, PipelineError, Plan};

use crate::util::{fixtures, Workdir};

/// Keeps every event, as text.
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl Observer for Recorder {
    fn on(&self, event: Event<'_>) {
        self.0.lock().unwrap().push(format!("{event:?}"));
    }
}

fn options(input: &str) -> Options {
    Options {
        inputs: vec![fixtures().join(input).display().to_string()],
        jobs: Some(2),
        ..Options::default()
    }
}

#[test]
fn a_library_run_reports_as_data_and_writes_what_the_binary_writes() {
    let wd = Workdir::new("pipeline_library_run");
    let out = wd.path("lib.csv");
    let mut asked = options("runs.jsonl");
    asked.verbose = true;
    let plan = Plan::new(&asked).unwrap();
    let recorder = Recorder::default();
    let run = RunOptions {
        output: OutputOptions {
            output: Some(out.display().to_string()),
            ..OutputOptions::default()
        },
        ..RunOptions::default()
    };
    let report = enrich::run(&plan, &run, &recorder).unwrap();
    assert_eq!((report.inputs, report.enriched), (1, 1));
    assert_eq!(report.stats.rows, 15);
    assert_eq!(report.stats.null_mfu_rows, 5);
    assert!(report.failures.is_empty());
    assert_eq!(
        report.warnings,
        ["unknown device 'Acme Tensor Engine X9': MFU is null for 5 rows; add the device with --peaks FILE or force a value with --peak-flops F"]
    );
    assert_eq!(
        report.wrote.as_deref(),
        Some(out.display().to_string().as_str())
    );
    let events = recorder.0.into_inner().unwrap();
    assert_eq!(
        events.iter().filter(|e| e.starts_with("InputDone")).count(),
        1,
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e.starts_with("Verbose") && e.contains("runs.jsonl: table log, 15 rows")),
        "{events:?}"
    );

    let cli_out = wd.path("cli.csv");
    wd.mfu()
        .arg("enrich")
        .arg(fixtures().join("runs.jsonl"))
        .arg("-o")
        .arg(&cli_out)
        .arg("--quiet")
        .assert()
        .success();
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(&cli_out).unwrap()
    );
}

#[test]
fn failures_are_typed_values_not_text() {
    let wd = Workdir::new("pipeline_failures");
    let bad = wd.create(
        "bad.jsonl",
        "{\"step\": 1, \"step_time\": 0.5}\n{not json\n",
    );
    let good = fixtures().join("runs.jsonl");
    let plan = Plan::new(&Options {
        inputs: vec![bad.display().to_string(), good.display().to_string()],
        ..Options::default()
    })
    .unwrap();
    let run = RunOptions {
        output: OutputOptions {
            out_dir: Some(wd.path("out")),
            ..OutputOptions::default()
        },
        ..RunOptions::default()
    };
    let report = enrich::run(&plan, &run, &mfu::pipeline::Silent).unwrap();
    assert_eq!((report.inputs, report.enriched), (2, 1));
    assert_eq!(report.failures.len(), 1);
    let failure = &report.failures[0];
    assert!(matches!(failure, PipelineError::Read(_)), "{failure:?}");
    let text = failure.to_string();
    assert!(
        text.contains("bad.jsonl") && text.contains("line 2"),
        "{text}"
    );
    assert!(wd.path("out/runs.parquet").exists());

    // A plan that cannot be made is an error before anything is read.
    let missing = Plan::new(&Options {
        inputs: vec![wd.path("nowhere.jsonl").display().to_string()],
        ..Options::default()
    });
    assert!(matches!(missing, Err(PipelineError::Inputs(_))));
}
