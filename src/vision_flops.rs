//! FLOPs per sample of common vision models, for `--flops-per-sample`: what a log that counts images
//! needs for MFU and cannot say itself.
//!
//! The figures are data ([`vision_flops.csv`](vision_flops.csv)): torchvision's own count for each
//! model's default weights, read from its source, with the image size it was counted at. torchvision
//! counts a multiply-accumulate once (ResNet-50 at 224 x 224: 4.089 G), so a training step's FLOPs per
//! image are 2 (a multiply and an add) x 3 (the forward pass, then a backward pass of about twice its
//! cost) x that count, the same forward-plus-backward convention as FLOPs per token.

use std::sync::OnceLock;

/// The table as built into the binary.
pub const BUILTIN_CSV: &str = include_str!("vision_flops.csv");

/// FLOPs of a training step (forward + backward) per multiply-accumulate of the forward pass.
pub const TRAINING_FLOPS_PER_MAC: f64 = 6.0;

/// One model of the table.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
pub struct VisionModel {
    /// The builder's name in torchvision (`resnet50`, `vit_b_16`).
    pub model: String,
    /// The weights the count is published with.
    pub weights: String,
    /// Parameters.
    pub params: u64,
    /// Forward multiply-accumulates per image, in billions, as torchvision publishes them.
    pub gmacs: f64,
    /// The side of the square image the count is for, in pixels.
    pub image_size: u32,
    /// Where the figure was read.
    pub source: String,
}

impl VisionModel {
    /// Model FLOPs of one image through a training step: forward and backward.
    pub fn flops_per_sample(&self) -> f64 {
        TRAINING_FLOPS_PER_MAC * self.gmacs * 1e9
    }
}

/// Errors of the built-in table (a test reads it; a user never sees one).
#[derive(Debug, thiserror::Error)]
#[error("the built-in vision FLOPs table, row {row}: {message}")]
pub struct TableError {
    pub row: usize,
    pub message: String,
}

/// Parses a table in the layout of the built-in one.
pub fn parse(text: &str) -> Result<Vec<VisionModel>, TableError> {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let mut models = Vec::new();
    for (i, record) in reader.deserialize::<VisionModel>().enumerate() {
        let model = record.map_err(|e| TableError {
            row: i + 2,
            message: e.to_string(),
        })?;
        if !(model.gmacs.is_finite() && model.gmacs > 0.0) || model.image_size == 0 {
            return Err(TableError {
                row: i + 2,
                message: format!("{}: a count and an image size above 0", model.model),
            });
        }
        models.push(model);
    }
    Ok(models)
}

/// The built-in table, parsed once.
pub fn models() -> &'static [VisionModel] {
    static MODELS: OnceLock<Vec<VisionModel>> = OnceLock::new();
    // The table is part of the binary and a unit test parses it: it cannot fail here.
    MODELS.get_or_init(|| parse(BUILTIN_CSV).unwrap_or_default())
}

/// The models a name asks for: the one of that name (`resnet50`, `ResNet-50`), else those whose name
/// begins with it at a word (`vit` gives every `vit_*`, `resnet` the ResNets but not `wide_resnet50_2`);
/// every model for an empty name.
pub fn find(name: &str) -> Vec<&'static VisionModel> {
    let wanted = normalise(name);
    let all = models();
    if wanted.is_empty() {
        return all.iter().collect();
    }
    if let Some(m) = all.iter().find(|m| normalise(&m.model) == wanted) {
        return vec![m];
    }
    all.iter()
        .filter(|m| {
            normalise(&m.model)
                .strip_prefix(&wanted)
                .is_some_and(|rest| ends_a_word(&wanted, rest))
        })
        .collect()
}

/// Whether a name cut after `wanted` leaves `rest` at a word's end: nothing, a `_`, or the model's
/// number after a family's name (`resnet` + `18`, but not `resnet5` + `0`).
fn ends_a_word(wanted: &str, rest: &str) -> bool {
    let digit = |c: char| c.is_ascii_digit();
    rest.is_empty()
        || rest.starts_with('_')
        || wanted.ends_with('_')
        || (rest.starts_with(digit) && !wanted.ends_with(digit))
}

/// Lower case, with `-`, spaces and `/` as `_`, and no `_` between a name and its number (`resnet_50`
/// and `ResNet-50` are `resnet50`, as torchvision writes it).
fn normalise(name: &str) -> String {
    let lowered: String = name
        .trim()
        .chars()
        .map(|c| match c {
            '-' | ' ' | '/' => '_',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    let mut out = String::with_capacity(lowered.len());
    let chars: Vec<char> = lowered.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        // `resnet_50` -> `resnet50`, but `vit_b_16` keeps its own (`b_16`: a letter of one).
        let joins = *c == '_'
            && i > 1
            && chars[i - 1].is_ascii_alphabetic()
            && chars[i - 2].is_ascii_alphabetic()
            && chars.get(i + 1).is_some_and(|n| n.is_ascii_digit());
        if !joins {
            out.push(*c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_table_parses_and_every_row_has_a_source() {
        let models = parse(BUILTIN_CSV).unwrap();
        assert!(models.len() >= 20, "{}", models.len());
        for m in &models {
            assert!(!m.source.trim().is_empty(), "{}", m.model);
            assert!(m.params > 0, "{}", m.model);
        }
        let mut names: Vec<&str> = models.iter().map(|m| m.model.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), models.len(), "a model twice");
    }

    #[test]
    fn resnet50_trains_on_six_times_its_published_multiply_accumulates() {
        let m = find("ResNet-50");
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].model, "resnet50");
        assert_eq!(m[0].gmacs, 4.089);
        assert!((m[0].flops_per_sample() - 24.534e9).abs() < 1e3);
    }

    #[test]
    fn a_name_finds_its_model_and_a_family_its_members_only() {
        assert_eq!(find("resnet_50")[0].model, "resnet50");
        let resnets: Vec<&str> = find("resnet").iter().map(|m| m.model.as_str()).collect();
        assert!(resnets.contains(&"resnet18") && resnets.contains(&"resnet152"));
        assert!(!resnets.contains(&"wide_resnet50_2"), "{resnets:?}");
        let vits: Vec<&str> = find("vit").iter().map(|m| m.model.as_str()).collect();
        assert!(
            vits.iter().all(|v| v.starts_with("vit_")) && vits.len() >= 3,
            "{vits:?}"
        );
        assert!(find("vit_b").iter().all(|m| m.model.starts_with("vit_b_")));
        assert!(find("resnet5").is_empty());
        assert!(find("nothing-like-it").is_empty());
        assert_eq!(find("").len(), models().len());
    }

    #[test]
    fn a_bad_row_is_an_error_naming_it() {
        let e =
            parse("model,weights,params,gmacs,image_size,source\nx,y,1,-2,224,z\n").unwrap_err();
        assert_eq!(e.row, 2);
        assert!(parse("model,weights,params,gmacs,image_size,source\nx,y,1,abc,224,z\n").is_err());
    }
}
