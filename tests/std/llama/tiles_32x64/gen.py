"""Inputs and golden of std.llama's layer at 192 tokens in 32-row tiles of a 64-wide head
(`--set seq=192 --set TILE_ROWS=32 --set HEAD_DIM=64`): examples/llama_layer's NumPy layer at
these sizes."""
import importlib.util
import os

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "llama_layer_gen", os.path.join(here, "../../../../examples/llama_layer/gen.py"))
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)
gen.generate(here, S=192, D=64, seed=7)
