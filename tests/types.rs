//! Column types that logs really hold reach every output format, or are refused with an error that names
//! the column and its type: never a failure of the whole file at encoding time.

use std::sync::Arc;

use arrow::array::{Array, DictionaryArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Int32Type, Schema};

use crate::util::{csv_rows, Workdir, H100_RUN_FLAGS as FLAGS};

fn read_parquet(path: &std::path::Path) -> RecordBatch {
    let file = std::fs::File::open(path).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap()
}

#[test]
fn a_column_null_in_every_row_is_written_in_every_format() {
    let wd = Workdir::new("types_null");
    // LLaMA-Factory's training lines carry eval_loss, predict_loss and reward as null.
    wd.create(
        "log.jsonl",
        "{\"step\":1,\"step_time\":2.9,\"tokens\":131072,\"eval_loss\":null}\n{\"step\":2,\"step_time\":3.1,\"tokens\":131072,\"eval_loss\":null}\n",
    );
    for format in ["parquet", "csv", "jsonl"] {
        let out = format!("out.{format}");
        wd.mfu()
            .args(["enrich", "log.jsonl", "-o", &out, "-q"])
            .args(FLAGS)
            .assert()
            .success();
        let path = wd.path(&out);
        match format {
            "parquet" => {
                let batch = read_parquet(&path);
                let column = batch.column_by_name("eval_loss").unwrap();
                assert_eq!(column.data_type(), &DataType::Null);
                assert_eq!((column.len(), column.logical_null_count()), (2, 2));
                assert_eq!(batch.num_rows(), 2);
                let mfu = batch.column_by_name("mfu_wall_clock").unwrap();
                assert_eq!(mfu.null_count(), 0);
            }
            "csv" => {
                let rows = csv_rows(&std::fs::read_to_string(&path).unwrap());
                assert_eq!(rows[1]["eval_loss"], "");
            }
            _ => {
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(
                    text.lines().all(|l| l.contains("\"eval_loss\":null")),
                    "{text}"
                );
            }
        }
    }
}

#[test]
fn integers_past_64_bits_keep_their_digits() {
    let wd = Workdir::new("types_int128");
    let big = "123456789012345678901234567890"; // 30 digits: past i64, within a 38-digit decimal
    wd.create(
        "log.jsonl",
        format!("{{\"step\":1,\"step_time\":2.9,\"tokens\":131072,\"seed\":{big}}}\n{{\"step\":2,\"step_time\":3.1,\"tokens\":131072,\"seed\":-5}}\n"),
    );
    wd.mfu()
        .args(["enrich", "log.jsonl", "-o", "out.parquet", "-q"])
        .args(FLAGS)
        .assert()
        .success();
    let batch = read_parquet(&wd.path("out.parquet"));
    let seed = batch.column_by_name("seed").unwrap();
    assert_eq!(seed.data_type(), &DataType::Decimal128(38, 0));
    let seed = seed
        .as_any()
        .downcast_ref::<arrow::array::Decimal128Array>()
        .unwrap();
    assert_eq!(seed.value(0), big.parse::<i128>().unwrap());
    assert_eq!(seed.value(1), -5);
    let csv = wd
        .mfu()
        .args(["enrich", "log.jsonl", "-o", "-", "-q"])
        .args(FLAGS)
        .output()
        .unwrap();
    let rows = csv_rows(std::str::from_utf8(&csv.stdout).unwrap());
    assert_eq!(rows[0]["seed"], big);

    // 39 digits fit i128 but no Arrow number: an error naming the column, and no output.
    wd.create(
        "huge.jsonl",
        "{\"step\":1,\"step_time\":2.9,\"tokens\":131072,\"seed\":170141183460469231731687303715884105727}\n",
    );
    let out = wd
        .mfu()
        .args(["enrich", "huge.jsonl", "-o", "huge.parquet", "-q"])
        .args(FLAGS)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("column 'seed' (i128): an integer of more than 38 digits"),
        "{stderr}"
    );
    assert!(!wd.path("huge.parquet").exists());
}

#[test]
fn dictionary_encoded_text_is_read_as_its_text() {
    let wd = Workdir::new("types_dictionary");
    // pandas writes a categorical column as a dictionary: here the step time, as text.
    let times: DictionaryArray<Int32Type> = vec!["2.9", "3.1", "2.9"].into_iter().collect();
    let schema = Schema::new(vec![
        Field::new("step", DataType::Int64, false),
        Field::new("step_time", times.data_type().clone(), true),
        Field::new("tokens", DataType::Int64, false),
        Field::new("loss", DataType::Float64, false),
        Field::new("note", DataType::Utf8, true),
    ]);
    let batch = RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(Int64Array::from(vec![1, 2, 3])),
            Arc::new(times),
            Arc::new(Int64Array::from(vec![131072; 3])),
            Arc::new(Float64Array::from(vec![2.5, 2.4, 2.3])),
            Arc::new(StringArray::from(vec![Some("a"), None, Some("c")])),
        ],
    )
    .unwrap();
    let file = std::fs::File::create(wd.path("log.parquet")).unwrap();
    let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let out = wd
        .mfu()
        .args(["enrich", "log.parquet", "-o", "-", "-q"])
        .args(FLAGS)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = csv_rows(std::str::from_utf8(&out.stdout).unwrap());
    assert_eq!(rows[1]["step_time"], "3.1");
    let tps: f64 = rows[1]["tokens_per_second"].parse().unwrap();
    assert!((tps - 131072.0 / 3.1).abs() < 1e-6, "{tps}");
}

#[test]
fn a_negative_zero_in_a_later_block_keeps_its_sign_when_streamed() {
    let wd = Workdir::new("types_negative_zero");
    // The column is fractional in the first block and only integers (with -0) in later ones.
    let mut text = String::from("step,step_time,tokens,x\n");
    for i in 0..600 {
        let x = match i {
            _ if i < 300 => "0.5".to_string(),
            _ if i % 2 == 1 => "-0".to_string(),
            _ => i.to_string(),
        };
        text.push_str(&format!("{i},1.5,131072,{x}\n"));
    }
    wd.create("log.csv", &text);
    for format in ["csv", "jsonl", "parquet"] {
        let out = format!("out.{format}");
        let streamed = wd
            .mfu()
            .env("MFU_BLOCK_BYTES", "4000")
            .args(["enrich", "log.csv", "-o", &out, "-v", "--force"])
            .args(FLAGS)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&streamed.stderr);
        assert!(stderr.contains("600 rows, streamed,"), "{stderr}");
        let whole = wd
            .mfu()
            .args([
                "enrich",
                "log.csv",
                "-o",
                "-",
                "--output-format",
                format,
                "-q",
            ])
            .args(FLAGS)
            .output()
            .unwrap();
        assert_eq!(
            std::fs::read(wd.path(&out)).unwrap(),
            whole.stdout,
            "{format}"
        );
    }
    let rows = csv_rows(&std::fs::read_to_string(wd.path("out.csv")).unwrap());
    assert_eq!(rows[301]["x"], "-0.0");
    assert_eq!(rows[302]["x"], "302.0");
}

#[test]
fn float_statistics_are_marked_with_the_order_every_reader_uses() {
    use parquet::basic::{ColumnOrder, SortOrder, Type};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let wd = Workdir::new("types_column_order");
    let mut text = String::from("step,step_time,tokens,wall\n");
    for i in 0..70_000 {
        text.push_str(&format!("{i},1.5,131072,{}\n", i as f64 * 0.5 + 0.25));
    }
    wd.create("log.csv", &text);
    wd.mfu()
        .args(["enrich", "log.csv", "-o", "out.parquet", "-q"])
        .args(FLAGS)
        .assert()
        .success();
    let reader =
        SerializedFileReader::new(std::fs::File::open(wd.path("out.parquet")).unwrap()).unwrap();
    let metadata = reader.metadata();
    let schema = metadata.file_metadata().schema_descr();
    let orders = metadata.file_metadata().column_orders().unwrap();
    assert_eq!(orders.len(), schema.num_columns());
    for (i, order) in orders.iter().enumerate() {
        let column = schema.column(i);
        let want = match column.physical_type() {
            Type::DOUBLE => ColumnOrder::TYPE_DEFINED_ORDER(SortOrder::SIGNED),
            Type::BYTE_ARRAY => ColumnOrder::TYPE_DEFINED_ORDER(SortOrder::UNSIGNED),
            _ => ColumnOrder::TYPE_DEFINED_ORDER(SortOrder::SIGNED),
        };
        assert_eq!(*order, want, "{}", column.name());
    }
    // Two row groups: the statistics of the float column bound each one's rows.
    assert_eq!(metadata.num_row_groups(), 2);
    let wall = (0..schema.num_columns())
        .find(|&i| schema.column(i).name() == "wall")
        .unwrap();
    let bounds: Vec<(f64, f64)> = metadata
        .row_groups()
        .iter()
        .map(|rg| match rg.column(wall).statistics().unwrap() {
            parquet::file::statistics::Statistics::Double(s) => {
                (*s.min_opt().unwrap(), *s.max_opt().unwrap())
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(bounds, [(0.25, 32767.75), (32768.25, 34999.75)]);
}

/// A frame with a `step` column and one column of `dtype` (values, with nulls), as the readers and the
/// enrichment can produce it.
fn one_type(name: &str) -> polars::prelude::DataFrame {
    use polars::prelude::*;
    let n = 5;
    let ints = Series::new(
        "v".into(),
        &[Some(1i64), None, Some(-2), Some(0), Some(40_000)],
    );
    let floats = Series::new(
        "v".into(),
        &[Some(1.5f64), None, Some(-0.0), Some(f64::NAN), Some(1e300)],
    );
    let texts = Series::new(
        "v".into(),
        &[Some("a"), None, Some("é,\"q\"\n"), Some(""), Some("a")],
    );
    let cast = |s: &Series, d: DataType| s.cast(&d).unwrap();
    let value: Series = match name {
        "null" => Series::full_null("v".into(), n, &DataType::Null),
        "bool" => Series::new(
            "v".into(),
            &[Some(true), None, Some(false), Some(true), None],
        ),
        "i8" => cast(
            &Series::new(
                "v".into(),
                &[Some(1i64), None, Some(-2), Some(0), Some(100)],
            ),
            DataType::Int8,
        ),
        "i16" => cast(&ints, DataType::Int16),
        "i32" => cast(&ints, DataType::Int32),
        "i64" => ints.clone(),
        "i128" => cast(&ints, DataType::Int128),
        "u8" => cast(
            &Series::new("v".into(), &[Some(1i64), None, Some(2), Some(0), Some(200)]),
            DataType::UInt8,
        ),
        "u16" => cast(
            &Series::new(
                "v".into(),
                &[Some(1i64), None, Some(2), Some(0), Some(40_000)],
            ),
            DataType::UInt16,
        ),
        "u32" => cast(
            &Series::new(
                "v".into(),
                &[Some(1i64), None, Some(2), Some(0), Some(40_000)],
            ),
            DataType::UInt32,
        ),
        "u64" => Series::new(
            "v".into(),
            &[Some(1u64), None, Some(2), Some(0), Some(u64::MAX)],
        ),
        "f32" => cast(&floats, DataType::Float32),
        "f64" => floats.clone(),
        "decimal" => Series::new(
            "v".into(),
            &[Some(1.25f64), None, Some(-2.5), Some(0.0), Some(400.75)],
        )
        .strict_cast(&DataType::Decimal(10, 2))
        .unwrap(),
        "str" => texts.clone(),
        "binary" => cast(&texts, DataType::Binary),
        "categorical" => cast(&texts, DataType::from_categories(Categories::global())),
        "date" => cast(&ints, DataType::Date),
        "datetime" => cast(&ints, DataType::Datetime(TimeUnit::Milliseconds, None)),
        "datetime_tz" => cast(
            &ints,
            DataType::Datetime(TimeUnit::Microseconds, Some(TimeZone::UTC)),
        ),
        "duration" => cast(&ints, DataType::Duration(TimeUnit::Nanoseconds)),
        "time" => cast(
            &Series::new(
                "v".into(),
                &[Some(1i64), None, Some(2), Some(0), Some(86_399_999_999_999)],
            ),
            DataType::Time,
        ),
        "list" => Series::new(
            "v".into(),
            &[
                Some(Series::new("".into(), &[1i64, 2])),
                None,
                Some(Series::new("".into(), &[] as &[i64])),
                Some(Series::new("".into(), &[3i64])),
                Some(Series::new("".into(), &[4i64, 5, 6])),
            ],
        ),
        "array" => cast(
            &Series::new(
                "v".into(),
                &[
                    Some(Series::new("".into(), &[1.0f64, 2.0])),
                    None,
                    Some(Series::new("".into(), &[3.0f64, 4.0])),
                    Some(Series::new("".into(), &[5.0f64, 6.0])),
                    Some(Series::new("".into(), &[7.0f64, 8.0])),
                ],
            ),
            DataType::Array(Box::new(DataType::Float64), 2),
        ),
        "struct" => StructChunked::from_series(
            "v".into(),
            n,
            [
                Series::new("a".into(), &[Some(1i64), None, Some(3), Some(4), Some(5)]),
                texts.clone().with_name("b".into()),
            ]
            .iter(),
        )
        .unwrap()
        .into_series(),
        other => panic!("{other}"),
    };
    let value = value.with_name(name.into());
    let step = Series::new("step".into(), &[1i64, 2, 3, 4, 5]);
    DataFrame::new(n, vec![step.into_column(), value.into_column()]).unwrap()
}

const TYPES: [&str; 25] = [
    "null",
    "bool",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "u8",
    "u16",
    "u32",
    "u64",
    "f32",
    "f64",
    "decimal",
    "str",
    "binary",
    "categorical",
    "date",
    "datetime",
    "datetime_tz",
    "duration",
    "time",
    "list",
    "array",
    "struct",
];

#[test]
fn every_column_type_reaches_every_format() {
    use mfu::write::{write_file, OutputFormat};
    let wd = Workdir::new("types_every_type");
    let mut failures = Vec::new();
    for name in TYPES {
        for format in [
            OutputFormat::Parquet,
            OutputFormat::Csv,
            OutputFormat::Jsonl,
        ] {
            let mut df = one_type(name);
            let path = wd.path(&format!("{name}.{format:?}"));
            let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                write_file(&path, format, &mut df, &Vec::new(), true)
            }));
            match written {
                Ok(Ok(())) => {}
                Ok(Err(e)) => failures.push(format!("{name} -> {format:?}: {e}")),
                Err(_) => failures.push(format!("{name} -> {format:?}: panicked")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    for name in TYPES {
        let df = one_type(name);
        let nulls = df.column(name).unwrap().null_count();
        // Parquet: every row, and the same nulls.
        let batch = read_parquet(&wd.path(&format!("{name}.Parquet")));
        let column = batch.column_by_name(name).unwrap();
        assert_eq!(batch.num_rows(), 5, "{name}");
        assert_eq!(column.logical_null_count(), nulls, "{name}");
        // CSV and JSON Lines: the same nulls; nested values, durations and bytes as the same text.
        let csv = csv_rows(&std::fs::read_to_string(wd.path(&format!("{name}.Csv"))).unwrap());
        let jsonl = std::fs::read_to_string(wd.path(&format!("{name}.Jsonl"))).unwrap();
        let json: Vec<serde_json::Value> = jsonl
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()[name].clone())
            .collect();
        assert_eq!((csv.len(), json.len()), (5, 5), "{name}");
        for (row, value) in csv.iter().zip(&json) {
            let cell = &row[name];
            if value.is_null() && !matches!(name, "f32" | "f64") {
                assert_eq!(cell, "", "{name}");
            }
            if matches!(
                name,
                "list" | "array" | "struct" | "duration" | "binary" | "str"
            ) {
                let text = match value {
                    serde_json::Value::Null => String::new(),
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                assert_eq!(cell, &text, "{name}");
            }
        }
    }
}

#[test]
fn a_parquet_input_with_bytes_enriches_to_every_format() {
    let wd = Workdir::new("types_binary_input");
    let schema = Schema::new(vec![
        Field::new("step", DataType::Int64, false),
        Field::new("step_time", DataType::Float64, false),
        Field::new("tokens", DataType::Int64, false),
        Field::new("tag", DataType::Binary, true),
    ]);
    let tags: Vec<Option<&[u8]>> = vec![Some(b"run-a"), None, Some(&[0xff, 0x01])];
    let batch = RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(Int64Array::from(vec![1, 2, 3])),
            Arc::new(Float64Array::from(vec![2.9, 3.1, 3.0])),
            Arc::new(Int64Array::from(vec![131072; 3])),
            Arc::new(arrow::array::BinaryArray::from(tags)),
        ],
    )
    .unwrap();
    let file = std::fs::File::create(wd.path("log.parquet")).unwrap();
    let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    for format in ["jsonl", "csv", "parquet"] {
        let out = format!("out.{format}");
        wd.mfu()
            .args(["enrich", "log.parquet", "-o", &out, "-q"])
            .args(FLAGS)
            .assert()
            .success();
    }
    // Not every value is UTF-8: the column is written as hexadecimal, byte for byte.
    let text = std::fs::read_to_string(wd.path("out.jsonl")).unwrap();
    let tags: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["tag"].clone())
        .collect();
    assert_eq!(
        tags,
        [
            serde_json::json!("72756e2d61"),
            serde_json::Value::Null,
            serde_json::json!("ff01")
        ]
    );
    let batch = read_parquet(&wd.path("out.parquet"));
    let tag = batch.column_by_name("tag").unwrap();
    assert!(
        matches!(tag.data_type(), DataType::Binary | DataType::LargeBinary),
        "{}",
        tag.data_type()
    );
    assert_eq!(tag.logical_null_count(), 1);
}
