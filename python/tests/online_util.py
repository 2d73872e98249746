"""Tiny models and token data for the online tests: built in the test, never downloaded."""

import torch

SEQ = 16
REAL = 12  # tokens per sample that are not padding
VOCAB = 128


def tiny_llama_config():
    from transformers import LlamaConfig

    # Two layers, grouped-query attention (4 query heads, 2 key/value heads).
    return LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=0,
    )


def tiny_llama():
    from transformers import LlamaForCausalLM

    torch.manual_seed(0)
    return LlamaForCausalLM(tiny_llama_config())


class PaddedTokens(torch.utils.data.Dataset):
    """Random token sequences of REAL tokens right-padded to SEQ, with their attention masks."""

    def __init__(self, n: int = 64, seed: int = 0):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(1, VOCAB, (n, SEQ), generator=g)
        self.ids[:, REAL:] = 0
        self.mask = torch.zeros(n, SEQ, dtype=torch.long)
        self.mask[:, :REAL] = 1

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        labels = self.ids[i].clone()
        labels[REAL:] = -100
        return {"input_ids": self.ids[i], "attention_mask": self.mask[i], "labels": labels}
