"""Configuration objects built for constructors that need them, and shrunk for tracing."""

from __future__ import annotations

from dataclasses import dataclass

from fxls.analysis.configs import arguments_for, shrink


class PretrainedConfig:
    def __init__(self, **kwargs):
        self.extra = kwargs


class LlamaLikeConfig(PretrainedConfig):
    def __init__(self, vocab_size=32000, hidden_size=4096, intermediate_size=11008,
                 num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                 head_dim=128, max_position_embeddings=4096, pad_token_id=31999, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size, self.hidden_size = vocab_size, hidden_size
        self.intermediate_size, self.num_hidden_layers = intermediate_size, num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.num_key_value_heads = num_key_value_heads
        self.head_dim, self.max_position_embeddings = head_dim, max_position_embeddings
        self.pad_token_id = pad_token_id


def test_a_hugging_face_style_config_is_shrunk_keeping_its_divisibility_rules():
    config = LlamaLikeConfig()
    assert shrink(config) == "2 layers, hidden size 64"
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (2, 64, 4)
    assert config.hidden_size % config.num_attention_heads == 0
    assert config.num_attention_heads % config.num_key_value_heads == 0
    assert config.head_dim * config.num_attention_heads == config.hidden_size
    assert (config.intermediate_size, config.vocab_size) == (128, 1024)
    assert config.pad_token_id < config.vocab_size
    assert config.max_position_embeddings == 512


def test_a_parameter_named_config_gets_the_files_own_config_not_its_base():
    class Attention:
        def __init__(self, config, layer_idx=0):
            self.config = config

    namespace = {"PretrainedConfig": PretrainedConfig, "LlamaLikeConfig": LlamaLikeConfig}
    kwargs, how = arguments_for(Attention, namespace)
    assert isinstance(kwargs["config"], LlamaLikeConfig)
    assert how == "built from LlamaLikeConfig() with 2 layers, hidden size 64"


def test_an_annotated_dataclass_config_is_built_and_an_ambiguous_one_is_not():
    @dataclass
    class BlockCfg:
        dim: int = 512
        depth: int = 24

    class Block:
        def __init__(self, cfg: BlockCfg, scale):
            pass

    kwargs, how = arguments_for(Block, {"BlockCfg": BlockCfg})
    assert kwargs["cfg"] == BlockCfg(dim=64, depth=2)
    assert how == "built from BlockCfg() with 2 layers, hidden size 64"

    class OtherConfig:
        pass

    class Unannotated:
        def __init__(self, config):
            pass

    # two unrelated *Config classes: which one is meant is not known
    namespace = {"LlamaLikeConfig": LlamaLikeConfig, "OtherConfig": OtherConfig}
    assert arguments_for(Unannotated, namespace) == ({}, "")
