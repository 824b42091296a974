"""A small OpenAI-compatible server for a randomly initialised transformers model on a GPU.

No weights can be downloaded on the benchmark machine, so the model is built from a config
(a 4-layer Llama, hidden 512, vocabulary 32000) with random weights; its text is nonsense, its
timing is real: prefill, then one forward pass per token with a KV cache, streamed as SSE.
Needs only torch, transformers and the standard library (the HTTP side is
rigaudit.tools.bench.fake_server.OpenAIStreamServer, stdlib only).

Usage: python benchmarks/tiny_openai_server.py --port 18000 [--device cuda:0] [--config-out tiny_config.json]
Then:  rigaudit bench inference --base-url http://127.0.0.1:18000 --model tiny-llama --yes
Prints "ready on http://127.0.0.1:PORT/v1" once it serves.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rigaudit.tools.bench.fake_server import Generation, OpenAIStreamServer  # noqa: E402

RESERVED = 16


class TinyModel:
    def __init__(self, device: str, hidden: int, layers: int, heads: int, vocab: int, dtype: str, seed: int) -> None:
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM

        torch.manual_seed(seed)
        self.torch = torch
        self.config = LlamaConfig(
            hidden_size=hidden,
            intermediate_size=int(hidden * 2.75) // 64 * 64,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            num_key_value_heads=heads,
            vocab_size=vocab,
            max_position_embeddings=4096,
            bos_token_id=1,
            eos_token_id=2,
            pad_token_id=0,
            tie_word_embeddings=False,
        )
        # built on the device in its dtype: a large random model (the memory-bound experiment of
        # benchmarks/explain_h200.py, tens of GB) never passes through host memory in FP32
        previous = torch.get_default_dtype()
        try:
            torch.set_default_dtype(getattr(torch, dtype))
            with torch.device(device):
                model = LlamaForCausalLM(self.config)
        except (TypeError, AttributeError, RuntimeError):  # an older torch: build on the host, then move
            torch.set_default_dtype(previous)
            model = LlamaForCausalLM(self.config)
        finally:
            torch.set_default_dtype(previous)
        self.model = model.to(device=device, dtype=getattr(torch, dtype)).eval()
        self.device = device
        self.vocab = vocab

    def encode(self, text: str) -> list[int]:
        words = text.split() or ["hello"]
        return [RESERVED + zlib.crc32(w.encode()) % (self.vocab - RESERVED) for w in words][-2048:]

    @staticmethod
    def decode(token: int) -> str:
        return f" w{token}"

    def tokens(self, prompt_ids: list[int], max_tokens: int, temperature: float) -> Iterator[str]:
        torch = self.torch
        room = 4096 - len(prompt_ids) - 1
        with torch.inference_mode():
            ids = torch.tensor([prompt_ids], device=self.device)
            out = self.model(input_ids=ids, use_cache=True)
        past = out.past_key_values
        logits = out.logits[:, -1, :]
        for _ in range(min(max_tokens, room)):
            with torch.inference_mode():
                if temperature > 0:
                    probs = torch.softmax(logits.float() / temperature, dim=-1)
                    token = torch.multinomial(probs, 1)
                else:
                    token = logits.argmax(dim=-1, keepdim=True)
                value = int(token.item())
            yield self.decode(value)
            with torch.inference_mode():
                out = self.model(input_ids=token, past_key_values=past, use_cache=True)
            past = out.past_key_values
            logits = out.logits[:, -1, :]


def make_generator(model: TinyModel) -> Any:
    def generate(body: dict[str, Any], prompt: str, max_tokens: int, number: int) -> Generation:
        del number
        ids = model.encode(prompt)
        temperature = float(body.get("temperature") or 0.0)
        return Generation(prompt_tokens=len(ids), tokens=model.tokens(ids, max_tokens, temperature))

    return generate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=18000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--model-name", default="tiny-llama")
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--config-out", type=Path, help="write the model's config.json here (for rigaudit roofline --config)")
    args = parser.parse_args()

    started = time.perf_counter()
    model = TinyModel(args.device, args.hidden, args.layers, args.heads, args.vocab, args.dtype, args.seed)
    for _ in model.tokens(model.encode("warm up the kernels"), 8, 0.0):
        pass
    params = sum(p.numel() for p in model.model.parameters())
    if args.config_out:
        config = model.config.to_dict()
        config["torch_dtype"] = args.dtype
        args.config_out.write_text(json.dumps(config, indent=2, default=str) + "\n")
    server = OpenAIStreamServer(make_generator(model), model=args.model_name, host=args.host, port=args.port)
    print(
        f"{args.model_name}: random {args.layers}-layer Llama, hidden {args.hidden}, {params / 1e6:.1f} M parameters, "
        f"{args.dtype} on {args.device}, built in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    print(f"ready on {server.base_url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
