"""Real models from the zoo, built small, each wrapped in a class of the user's own with its
example inputs (tests/realmodels/test_real_targets.py). The line marked ``# the user's call``
is where a problem whose stack is all library code is reported."""

import torch.nn as nn
import torchvision
from timm.models.sequencer import Sequencer2d
from timm.models.vision_transformer import VisionTransformer
from transformers import (
    BertConfig,
    BertModel,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaModel,
    MixtralConfig,
    MixtralModel,
    SwitchTransformersConfig,
    SwitchTransformersEncoderModel,
    T5Config,
    T5Model,
    Wav2Vec2Config,
    Wav2Vec2ForCTC,
)

VOCAB = 99


class Bert(nn.Module):
    # fxls: args (torch.randint(0, 99, (2, 7)),)
    def __init__(self):
        super().__init__()
        self.model = BertModel(BertConfig(
            vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=37))

    def forward(self, input_ids):
        return self.model(input_ids).last_hidden_state  # the user's call


class Gpt2(nn.Module):
    # fxls: args (torch.randint(0, 99, (2, 7)),)
    def __init__(self):
        super().__init__()
        self.model = GPT2LMHeadModel(GPT2Config(
            vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=2, n_positions=64,
            bos_token_id=0, eos_token_id=0))

    def forward(self, input_ids):
        return self.model(input_ids, use_cache=False).logits  # the user's call


class Gpt2WithCache(nn.Module):
    """Returns the whole output, its ``DynamicCache`` included: export cannot flatten it."""

    # fxls: args (torch.randint(0, 99, (2, 7)),)
    def __init__(self):
        super().__init__()
        self.model = GPT2LMHeadModel(GPT2Config(
            vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=2, n_positions=64,
            bos_token_id=0, eos_token_id=0))

    def forward(self, input_ids):
        return self.model(input_ids)  # the user's call


class T5(nn.Module):
    # fxls: args (torch.randint(0, 99, (2, 7)), torch.randint(0, 99, (2, 5)))
    def __init__(self):
        super().__init__()
        self.model = T5Model(T5Config(
            vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4))

    def forward(self, input_ids, decoder_input_ids):
        return self.model(input_ids, decoder_input_ids=decoder_input_ids,  # the user's call
                          use_cache=False).last_hidden_state


class Llama(nn.Module):
    # fxls: args (torch.randint(0, 99, (2, 7)),)
    def __init__(self):
        super().__init__()
        self.model = LlamaModel(LlamaConfig(
            vocab_size=VOCAB, hidden_size=32, intermediate_size=37, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2))

    def forward(self, input_ids):
        return self.model(input_ids, use_cache=False).last_hidden_state  # the user's call


class Mixtral(nn.Module):
    # fxls: args (torch.randint(0, 99, (2, 7)),)
    def __init__(self):
        super().__init__()
        self.model = MixtralModel(MixtralConfig(
            vocab_size=VOCAB, hidden_size=32, intermediate_size=37, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
            num_experts_per_tok=2))

    def forward(self, input_ids):
        return self.model(input_ids, use_cache=False).last_hidden_state  # the user's call


class SwitchEncoder(nn.Module):
    """Mixture of experts: each expert runs on the tokens routed to it (a data-dependent
    shape, a graph break in dynamo)."""

    # fxls: args (torch.randint(0, 99, (2, 7)),)
    def __init__(self):
        super().__init__()
        self.model = SwitchTransformersEncoderModel(SwitchTransformersConfig(
            vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4,
            num_experts=4, num_sparse_encoder_layers=1))

    def forward(self, input_ids):
        return self.model(input_ids).last_hidden_state  # the user's call


class Wav2Vec2Ctc(nn.Module):
    """With labels the model computes its CTC loss: lengths from a mask, a data-dependent
    check of the labels' values."""

    # fxls: args (torch.randn(2, 400), torch.randint(1, 20, (2, 5)))
    def __init__(self):
        super().__init__()
        self.model = Wav2Vec2ForCTC(Wav2Vec2Config(
            vocab_size=20, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=37, conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
            num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2,
            do_stable_layer_norm=True))

    def forward(self, input_values, labels):
        return self.model(input_values, labels=labels).loss  # the user's call


class Vit(nn.Module):
    # fxls: args (torch.randn(2, 3, 32, 32),)
    def __init__(self):
        super().__init__()
        self.model = VisionTransformer(img_size=32, patch_size=8, embed_dim=32, depth=2,
                                       num_heads=2, num_classes=10)

    def forward(self, images):
        return self.model(images)  # the user's call


class Sequencer(nn.Module):
    """timm's recurrent model: bidirectional LSTMs over rows and columns (dynamo does not
    trace into an LSTM: a graph break at each)."""

    # fxls: args (torch.randn(2, 3, 32, 32),)
    def __init__(self):
        super().__init__()
        self.model = Sequencer2d(num_classes=10, img_size=32, layers=(1, 1),
                                 patch_sizes=(8, 2), embed_dims=(32, 64), hidden_sizes=(16, 32),
                                 mlp_ratios=(2.0, 2.0))

    def forward(self, images):
        return self.model(images)  # the user's call


class ResNet(nn.Module):
    # fxls: args (torch.randn(2, 3, 32, 32),)
    def __init__(self):
        super().__init__()
        self.model = torchvision.models.resnet18(num_classes=10)

    def forward(self, images):
        return self.model(images)  # the user's call


class FasterRcnn(nn.Module):
    """Detection: the region proposals' boxes are filtered by their scores (data-dependent
    sizes), and non-maximum suppression is a C++ op of torchvision's."""

    # fxls: args ([torch.rand(3, 128, 128)],)
    def __init__(self):
        super().__init__()
        self.model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
            weights=None, weights_backbone=None, num_classes=3)

    def forward(self, images):
        return self.model(images)  # the user's call
