//! Training-precision spellings → one of the seven dtypes the peak table knows.
//!
//! Trainers spell precision in many ways (`torch.bfloat16`, `bf16-mixed`, Lightning's `16-mixed`,
//! accelerate's `no`). Everything maps onto [`Dtype`]; anything unrecognised is reported, never guessed.

use std::fmt;
use std::str::FromStr;

/// A precision with its own dense peak in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dtype {
    Fp64,
    Fp32,
    Tf32,
    Bf16,
    Fp16,
    Fp8,
    Int8,
    /// 6-bit floats (OCP MXFP6: E3M2, E2M3), where a vendor lists a rate.
    Fp6,
    /// 4-bit floats (NVFP4, OCP MXFP4: E2M1).
    Fp4,
}

impl Dtype {
    /// Every dtype, in the order of the table's columns.
    pub const ALL: [Dtype; 9] = [
        Dtype::Fp64,
        Dtype::Fp32,
        Dtype::Tf32,
        Dtype::Bf16,
        Dtype::Fp16,
        Dtype::Fp8,
        Dtype::Int8,
        Dtype::Fp6,
        Dtype::Fp4,
    ];

    /// Canonical short name (`bf16`), as used in the table header and in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Dtype::Fp64 => "fp64",
            Dtype::Fp32 => "fp32",
            Dtype::Tf32 => "tf32",
            Dtype::Bf16 => "bf16",
            Dtype::Fp16 => "fp16",
            Dtype::Fp8 => "fp8",
            Dtype::Int8 => "int8",
            Dtype::Fp6 => "fp6",
            Dtype::Fp4 => "fp4",
        }
    }

    /// Position in [`Dtype::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a precision spelling means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// A dtype with its own peak.
    Known(Dtype),
    /// accelerate's `mixed_precision = "no"`: the model's own dtype, which the log does not say.
    ModelDtype,
}

/// Reads a precision spelling. `None` means the spelling is not one we know.
pub fn parse_precision(spelling: &str) -> Option<Precision> {
    let s = spelling.trim().to_ascii_lowercase();
    let s = s
        .strip_prefix("torch.")
        .or_else(|| s.strip_prefix("jnp."))
        .or_else(|| s.strip_prefix("np."))
        .unwrap_or(&s);
    let dtype = match s {
        "bf16" | "bfloat16" | "bf16-mixed" | "bf16-true" | "bf16_mixed" | "bf16_true"
        | "amp_bf16" | "amp-bf16" => Dtype::Bf16,
        "fp16" | "float16" | "half" | "f16" | "16" | "16-mixed" | "16-true" | "16_mixed"
        | "amp_fp16" | "amp-fp16" => Dtype::Fp16,
        "fp32" | "float32" | "float" | "f32" | "32" | "32-true" | "32_true" => Dtype::Fp32,
        "tf32" | "tfloat32" => Dtype::Tf32,
        "fp8" | "float8" | "float8_e4m3fn" | "float8_e5m2" | "float8_e4m3fnuz"
        | "float8_e5m2fnuz" | "e4m3" | "e5m2" | "amp_fp8" | "amp-fp8"
        // Lightning's Transformer Engine precisions run the matrix multiplies in FP8.
        | "transformer-engine" | "transformer-engine-float16" | "transformer_engine" => Dtype::Fp8,
        "int8" | "i8" => Dtype::Int8,
        "fp6" | "mxfp6" | "float6" | "float6_e3m2fn" | "float6_e2m3fn" | "fp6_e3m2"
        | "fp6_e2m3" | "e3m2" | "e2m3" => Dtype::Fp6,
        "fp4" | "nvfp4" | "mxfp4" | "float4" | "float4_e2m1fn_x2" | "fp4_e2m1" | "e2m1" => {
            Dtype::Fp4
        }
        "fp64" | "float64" | "double" | "f64" | "64" | "64-true" | "64_true" => Dtype::Fp64,
        "no" => return Some(Precision::ModelDtype),
        _ => return None,
    };
    Some(Precision::Known(dtype))
}

/// Reads a dtype the user gave on the command line (`--dtype`, `--model-dtype`); `no` is not a dtype here.
pub fn parse_dtype(spelling: &str) -> Option<Dtype> {
    match parse_precision(spelling) {
        Some(Precision::Known(d)) => Some(d),
        _ => None,
    }
}

impl FromStr for Dtype {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_dtype(s).ok_or_else(|| {
            format!("unknown precision '{s}': expected one of fp64, fp32, tf32, bf16, fp16, fp8, int8, fp6, fp4 (or a spelling such as torch.bfloat16, bf16-mixed, 16-mixed)")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_spelling_reads() {
        let cases = [
            ("bf16", Dtype::Bf16),
            ("bfloat16", Dtype::Bf16),
            ("torch.bfloat16", Dtype::Bf16),
            ("bf16-mixed", Dtype::Bf16),
            ("bf16-true", Dtype::Bf16),
            ("amp_bf16", Dtype::Bf16),
            ("fp16", Dtype::Fp16),
            ("float16", Dtype::Fp16),
            ("half", Dtype::Fp16),
            ("torch.float16", Dtype::Fp16),
            ("16", Dtype::Fp16),
            ("16-mixed", Dtype::Fp16),
            ("16-true", Dtype::Fp16),
            ("amp_fp16", Dtype::Fp16),
            ("fp32", Dtype::Fp32),
            ("float32", Dtype::Fp32),
            ("float", Dtype::Fp32),
            ("32", Dtype::Fp32),
            ("32-true", Dtype::Fp32),
            ("torch.float32", Dtype::Fp32),
            ("tf32", Dtype::Tf32),
            ("tfloat32", Dtype::Tf32),
            ("fp8", Dtype::Fp8),
            ("float8_e4m3fn", Dtype::Fp8),
            ("float8_e5m2", Dtype::Fp8),
            ("e4m3", Dtype::Fp8),
            ("amp_fp8", Dtype::Fp8),
            ("transformer-engine", Dtype::Fp8),
            ("transformer-engine-float16", Dtype::Fp8),
            ("int8", Dtype::Int8),
            ("fp4", Dtype::Fp4),
            ("nvfp4", Dtype::Fp4),
            ("MXFP4", Dtype::Fp4),
            ("e2m1", Dtype::Fp4),
            ("torch.float4_e2m1fn_x2", Dtype::Fp4),
            ("fp6", Dtype::Fp6),
            ("mxfp6", Dtype::Fp6),
            ("e3m2", Dtype::Fp6),
            ("e2m3", Dtype::Fp6),
            ("fp64", Dtype::Fp64),
            ("float64", Dtype::Fp64),
            ("64-true", Dtype::Fp64),
            (" BF16 ", Dtype::Bf16),
        ];
        for (spelling, want) in cases {
            assert_eq!(
                parse_precision(spelling),
                Some(Precision::Known(want)),
                "{spelling}"
            );
        }
    }

    #[test]
    fn no_means_model_dtype_and_unknowns_are_none() {
        assert_eq!(parse_precision("no"), Some(Precision::ModelDtype));
        assert_eq!(parse_dtype("no"), None);
        for bad in ["", "fp5", "mixed", "bf17", "int4", "torch.", "8"] {
            assert_eq!(parse_precision(bad), None, "{bad}");
        }
    }

    #[test]
    fn from_str_names_the_spelling() {
        let err = "bf17".parse::<Dtype>().unwrap_err();
        assert!(err.contains("'bf17'"), "{err}");
    }
}
