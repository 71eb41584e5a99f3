"""A tiny random Qwen2-style model with a locally trained tokenizer: no network, about 1 s.

It runs every training and evaluation code path on CPU the way a real Qwen2.5 checkpoint does
(``codereasoner train tiny-model OUT``; the tests' fixture; the README's smoke path): a 2048-token
byte-level BPE trained on the Python standard library's sources with the pipeline
``Qwen2Tokenizer`` rebuilds on load (NFC, the Qwen2 split pattern, byte level), a 2-layer
205k-parameter model, ChatML with ``<|im_end|>`` as EOS and ``<|endoftext|>`` as padding.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast, Qwen2ForCausalLM

QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _stdlib_texts(limit: int = 150) -> list[str]:
    folder = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(folder.glob("*.py"))[:limit]
    return [path.read_text(encoding="utf-8", errors="replace") for path in files]


def qwen2_model(
    tokenizer: PreTrainedTokenizerFast,
    *,
    hidden: int,
    ffn: int,
    layers: int,
    heads: int,
    kv_heads: int,
    max_positions: int = 1024,
) -> Qwen2ForCausalLM:
    """A randomly initialised Qwen2 model sized as asked, for ``tokenizer`` (its EOS and padding
    end generation); seed torch before calling for reproducible weights."""
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=ffn,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=[tokenizer.eos_token_id, tokenizer.pad_token_id],
        pad_token_id=tokenizer.pad_token_id,
        do_sample=True,
        temperature=1.0,
        top_p=1.0,
    )
    return model


def build_tiny_model(out: Path, seed: int = 0) -> Path:
    """Train a 2048-token byte-level BPE on stdlib sources, save it with a random 2-layer
    Qwen2 model in ``out``; returns ``out``. The same seed gives the same weights."""
    import torch
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from tokenizers.trainers import BpeTrainer
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE())
    raw.normalizer = normalizers.NFC()
    raw.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    raw.decoder = decoders.ByteLevel()
    trainer = BpeTrainer(
        vocab_size=2048,
        min_frequency=2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
    )
    raw.train_from_iterator(_stdlib_texts(), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        unk_token=None,
        additional_special_tokens=["<|im_start|>"],
        model_max_length=1024,
        padding_side="left",
    )
    tokenizer.chat_template = CHATML
    torch.manual_seed(seed)
    model = qwen2_model(tokenizer, hidden=64, ffn=128, layers=2, heads=4, kv_heads=2)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
