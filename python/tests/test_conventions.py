"""FLOPs-per-token conventions (``convention=``) held to what the frameworks themselves count on a real model:
torch's FlopCounterMode (what Lightning's ``measure_flops`` runs) through a tiny Transformers Llama on CPU with
eager and SDPA attention, ``PreTrainedModel.floating_point_ops``, and torchtitan's and nanoGPT's formulas
applied to the model's own parameter counts."""

import pytest

import mfu
from mfu import online

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

H100 = "NVIDIA H100 80GB HBM3"
SEQ = 32
BATCH = 2


def tiny_llama(attn_implementation: str, tied: bool):
    config = transformers.LlamaConfig(
        vocab_size=96,
        hidden_size=64,
        intermediate_size=160,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,  # grouped-query attention: k and v narrower than q
        max_position_embeddings=SEQ,
        tie_word_embeddings=tied,
        attn_implementation=attn_implementation,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    model.config._attn_implementation = attn_implementation
    return model


def counted_per_token(model) -> float:
    """Forward and backward FLOPs of one training step, as FlopCounterMode counts them, per token."""
    from torch.utils.flop_counter import FlopCounterMode

    ids = torch.randint(0, model.config.vocab_size, (BATCH, SEQ))
    counter = FlopCounterMode(display=False)
    with counter:
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
    return counter.get_total_flops() / (BATCH * SEQ)


@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize(
    "attn_implementation,convention", [("eager", "lightning-eager"), ("sdpa", "lightning-fused")]
)
def test_lightning_conventions_equal_flop_counter_mode(attn_implementation, convention, tied):
    model = tiny_llama(attn_implementation, tied)
    counted = counted_per_token(model)
    expected = online.flops_per_token(model.config, SEQ, convention=convention)
    assert expected == pytest.approx(counted, rel=1e-12)
    # Eager attention's six matmuls (2 forward, 4 backward) are mfu's 6 (d_qk + d_v) H S; SDPA's backward
    # recomputes the scores, one matmul more.
    mfu_own = online.flops_per_token(model.config, SEQ)
    assert (expected == mfu_own) == (attn_implementation == "eager")


def test_the_fused_and_eager_gap_is_the_recomputed_scores():
    eager = online.flops_per_token(tiny_llama("eager", False).config, SEQ, convention="lightning-eager")
    fused = online.flops_per_token(tiny_llama("sdpa", False).config, SEQ, convention="lightning-fused")
    layers, heads, head_dim = 2, 4, 16
    # sdpa_backward_flop_count: one S x S x d matmul more than eager's backward, 2 S H d FLOPs per token.
    assert fused - eager == pytest.approx(2 * SEQ * heads * head_dim * layers, rel=1e-12)


@pytest.mark.parametrize("tied", [False, True])
def test_hf_convention_equals_floating_point_ops(tied):
    model = tiny_llama("eager", tied)
    ids = torch.zeros((BATCH, SEQ), dtype=torch.long)
    inputs = {"input_ids": ids}
    if hasattr(model, "floating_point_ops"):  # Transformers 4: a method of the model
        hf = model.floating_point_ops(inputs)
    else:  # Transformers 5 moved it onto the Trainer, reading only trainer.model
        import types

        hf = transformers.Trainer.floating_point_ops(types.SimpleNamespace(model=model), inputs)
    hf /= BATCH * SEQ
    assert online.flops_per_token(model.config, SEQ, convention="hf") == pytest.approx(hf, rel=1e-12)


def test_torchtitan_and_nanogpt_conventions_equal_their_formulas_on_the_model_parameters():
    model = tiny_llama("eager", False)
    layers, heads, head_dim = 2, 4, 16
    params = sum(p.numel() for p in model.parameters())
    embedding = model.model.embed_tokens.weight.numel()
    # torchtitan get_dense_model_nparams_and_flops: 6 (nparams - nparams_embedding) + 12 l h q t.
    torchtitan = 6 * (params - embedding) + 12 * layers * heads * head_dim * SEQ
    assert online.flops_per_token(model.config, SEQ, convention="torchtitan") == pytest.approx(torchtitan, rel=1e-12)
    # nanoGPT estimate_mfu: 6 N + 12 L H Q T, N = get_num_params() (no position embedding to leave out here, and
    # the untied token embedding counted as a matmul).
    nanogpt = 6 * params + 12 * layers * heads * head_dim * SEQ
    assert online.flops_per_token(model.config, SEQ, convention="nanogpt") == pytest.approx(nanogpt, rel=1e-12)


def test_meter_counts_with_the_convention_it_is_given():
    config = tiny_llama("eager", False).config
    own = mfu.Meter(H100, "bf16", model_config=config)
    megatron = mfu.Meter(H100, "bf16", model_config=config, convention="megatron")
    a = own.step(4096, 0.5, seq_len=SEQ)
    b = megatron.step(4096, 0.5, seq_len=SEQ)
    fpt = online.flops_per_token(config, SEQ, convention="megatron")
    assert b["perf/flops_per_token"] == fpt
    assert b["perf/mfu_wall_clock"] / a["perf/mfu_wall_clock"] == pytest.approx(
        fpt / a["perf/flops_per_token"], rel=1e-12
    )


def test_an_unknown_convention_is_refused_with_the_names():
    with pytest.raises(ValueError, match="megatron"):
        online.flops_per_token({"model_type": "llama", "hidden_size": 32, "intermediate_size": 64,
                                "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 128},
                               16, convention="bogus")


def test_enrich_rebases_a_logged_mfu_on_both_sides(tmp_path):
    import json

    import pyarrow as pa

    config = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 96}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    theirs = online.flops_per_token(config, SEQ, convention="torchtitan")
    tokens, step_time, their_peak = [4096.0, 8192.0], [0.5, 0.75], 312e12
    logged = [t * theirs / (8 * s) / their_peak for t, s in zip(tokens, step_time)]
    table = pa.table({"tokens": tokens, "step_time": step_time, "mfu": logged})
    out = mfu.enrich(table, device=H100, dtype="bf16", num_devices=8, model_config=str(path), seq_len=SEQ,
                     logged_peak_flops=their_peak, logged_convention="torchtitan").to_pylist()
    for row in out:
        assert row["mfu_logged_corrected"] == pytest.approx(row["mfu_wall_clock"], rel=1e-12)

    # convention= computes the MFU columns themselves with that framework's numerator (mfu's peak).
    theirs_table = mfu.enrich(table, device=H100, dtype="bf16", num_devices=8, model_config=str(path),
                              seq_len=SEQ, convention="torchtitan").to_pylist()
    ours = online.flops_per_token(config, SEQ)
    for own, row in zip(out, theirs_table):
        assert row["mfu_wall_clock"] / own["mfu_wall_clock"] == pytest.approx(theirs / ours, rel=1e-12)


def test_a_convention_that_cannot_apply_is_said_for_tables_in_memory_too():
    import pyarrow as pa

    table = pa.table({"tokens": [4096.0], "step_time": [0.5]})
    with pytest.warns(mfu.MfuWarning, match="--convention megatron counts FLOPs per token from a model config"):
        out = mfu.enrich(table, device=H100, dtype="bf16", num_devices=8, flops_per_token=4.2e10,
                         convention="megatron").to_pylist()
    assert out[0]["achieved_flops_per_device"] == pytest.approx(4096 / 0.5 * 4.2e10 / 8, rel=1e-12)
