//! Column types that logs really hold reach every output format, or are refused with an error that names
//! the column and its type: never a failure of the whole file at encoding time.

use std::sync::Arc;

use arrow::array::{Array, DictionaryArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Int32Type, Schema};

use crate::util::{csv_rows, Workdir};

const FLAGS: [&str; 8] = [
    "--num-devices",
    "8",
    "--flops-per-token",
    "4.2e10",
    "--device",
    "NVIDIA H100 80GB HBM3",
    "--dtype",
    "bf16",
];

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
