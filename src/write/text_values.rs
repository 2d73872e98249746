//! Values the text formats (CSV, JSON Lines) cannot hold as they are.
//!
//! A binary column (a Parquet BYTE_ARRAY column without a UTF-8 annotation, as some writers leave text)
//! becomes text: its values as they are when every one is valid UTF-8, else every value in lowercase
//! hexadecimal (two digits a byte), so no byte is lost or silently replaced. polars' CSV writer refuses
//! bytes and its JSON writer panics on them, so this runs before both.

use std::fmt::Write as _;

use polars::prelude::*;

/// `df` with its binary columns as text, or `None` when it has none.
pub(crate) fn bytes_as_text(df: &DataFrame) -> PolarsResult<Option<DataFrame>> {
    let binary: Vec<usize> = df
        .columns()
        .iter()
        .enumerate()
        .filter(|(_, c)| matches!(c.dtype(), DataType::Binary | DataType::BinaryOffset))
        .map(|(i, _)| i)
        .collect();
    if binary.is_empty() {
        return Ok(None);
    }
    let mut out = df.clone();
    for i in binary {
        let column = out.columns()[i].cast(&DataType::Binary)?;
        let values = column.binary()?;
        let utf8 = values
            .iter()
            .flatten()
            .all(|b| std::str::from_utf8(b).is_ok());
        let text: Vec<Option<String>> = values
            .iter()
            .map(|v| {
                v.map(|bytes| match std::str::from_utf8(bytes) {
                    Ok(s) if utf8 => s.to_string(),
                    _ => bytes
                        .iter()
                        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
                            let _ = write!(s, "{b:02x}");
                            s
                        }),
                })
            })
            .collect();
        out.replace_column(i, Column::new(column.name().clone(), text))?;
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binary(values: &[Option<&[u8]>]) -> DataFrame {
        let s = Series::new("b".into(), values);
        DataFrame::new(values.len(), vec![s.into_column()]).unwrap()
    }

    #[test]
    fn text_bytes_stay_text_and_others_become_hex() {
        let df = binary(&[Some(b"NVIDIA H100"), None, Some("é".as_bytes())]);
        let text = bytes_as_text(&df).unwrap().unwrap();
        let col = text.column("b").unwrap().str().unwrap().clone();
        assert_eq!(
            col.iter().collect::<Vec<_>>(),
            [Some("NVIDIA H100"), None, Some("é")]
        );
        let df = binary(&[Some(b"ab"), Some(&[0xff, 0x00]), None]);
        let text = bytes_as_text(&df).unwrap().unwrap();
        let col = text.column("b").unwrap().str().unwrap().clone();
        assert_eq!(
            col.iter().collect::<Vec<_>>(),
            [Some("6162"), Some("ff00"), None]
        );
        let plain = DataFrame::new(1, vec![Column::new("x".into(), [1i64])]).unwrap();
        assert!(bytes_as_text(&plain).unwrap().is_none());
    }
}
