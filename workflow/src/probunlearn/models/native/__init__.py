"""Causal LMs and a tokenizer in plain torch (Llama, Mistral, Phi), bit-equal to transformers'."""
