//! PyTorch Lightning CSVLogger `metrics.csv`: a wide, sparse table where each `log` call writes a row
//! holding only its own keys, so one step has several rows (a training row, a validation row, an epoch
//! row). The rows of one step are merged: each column takes its first non-empty value, in file order.

use std::collections::HashMap;

use super::ShapedFrame;

pub fn read(bytes: &[u8]) -> Result<ShapedFrame, String> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(false)
        .from_reader(bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes));
    let headers = reader.headers().map_err(|e| e.to_string())?.clone();
    let step_col = headers
        .iter()
        .position(|h| h.trim() == "step")
        .ok_or("no 'step' column")?;
    let mut merged: Vec<Vec<String>> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut rows_in = 0;
    for record in reader.records() {
        let record = record.map_err(|e| e.to_string())?;
        rows_in += 1;
        let step = record.get(step_col).unwrap_or("").trim().to_string();
        match index.get(&step) {
            Some(&i) => {
                for (cell, value) in merged[i].iter_mut().zip(record.iter()) {
                    if cell.is_empty() && !value.is_empty() {
                        *cell = value.to_string();
                    }
                }
            }
            None => {
                index.insert(step, merged.len());
                merged.push(record.iter().map(str::to_string).collect());
            }
        }
    }
    let mut out = csv::Writer::from_writer(Vec::new());
    out.write_record(&headers).map_err(|e| e.to_string())?;
    for row in &merged {
        out.write_record(row).map_err(|e| e.to_string())?;
    }
    let bytes = out.into_inner().map_err(|e| e.to_string())?;
    Ok(ShapedFrame {
        frame: crate::read::csv::read(bytes, b',')?,
        notes: vec![format!("{rows_in} rows merged into {} steps", merged.len())],
        ..Default::default()
    })
}
