"""The worked example of the kernel-table benchmark: decoder layers of Llama-2-7B's size (hidden 4096, intermediate
11008, 32 heads of 128) written as plain PyTorch modules, every projection (q, k, v, o, gate, up, down) a product
``x · W`` through a matmul that can be swapped (``torch.matmul`` by default), attention by PyTorch's own
``scaled_dot_product_attention``. Imports PyTorch: benchmarks/table_device.py imports it inside its functions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

HIDDEN = 4096
INTERMEDIATE = 11008
HEADS = 32

Matmul = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class Projection(nn.Module):
    """``x · W`` with W stored K×N row-major (in_features × out_features), through the model's matmul."""

    def __init__(self, model: LlamaStack, in_features: int, out_features: int, dtype: torch.dtype):
        super().__init__()
        weight = torch.randn(in_features, out_features) * in_features ** -0.5
        self.weight = nn.Parameter(weight.to(dtype), requires_grad=False)
        self._model = [model]  # a list: not registered as a submodule (the model holds this one)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])
        return self._model[0].matmul(rows, self.weight).reshape(*x.shape[:-1], self.weight.shape[1])


class RMSNorm(nn.Module):
    def __init__(self, size: int, dtype: torch.dtype, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size, dtype=dtype), requires_grad=False)
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scaled = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return scaled.to(x.dtype) * self.weight


class DecoderLayer(nn.Module):
    def __init__(self, model: LlamaStack, dtype: torch.dtype):
        super().__init__()
        self.attention_norm, self.mlp_norm = RMSNorm(HIDDEN, dtype), RMSNorm(HIDDEN, dtype)
        self.q, self.k, self.v, self.o = (Projection(model, HIDDEN, HIDDEN, dtype) for _ in range(4))
        self.gate, self.up = (Projection(model, HIDDEN, INTERMEDIATE, dtype) for _ in range(2))
        self.down = Projection(model, INTERMEDIATE, HIDDEN, dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = x.shape[0]
        h = self.attention_norm(x)
        # (1, heads, tokens, head size): the layout of PyTorch's fused attention kernels
        q, k, v = (p(h).view(1, tokens, HEADS, -1).transpose(1, 2) for p in (self.q, self.k, self.v))
        attended = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(attended.transpose(1, 2).reshape(tokens, HIDDEN))
        h = self.mlp_norm(x)
        return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))


class LlamaStack(nn.Module):
    """``layers`` decoder layers over a (tokens × hidden) input; ``matmul`` is the product every projection uses."""

    def __init__(self, layers: int, dtype: torch.dtype = torch.bfloat16, matmul: Matmul = torch.matmul):
        super().__init__()
        self.matmul = matmul
        self.layers = nn.ModuleList(DecoderLayer(self, dtype) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def make_model(layers: int, seed: int = 0) -> Any:
    """A bfloat16 stack on the GPU, its weights drawn from ``seed``."""
    torch.manual_seed(seed)
    return LlamaStack(layers).to("cuda").eval()

