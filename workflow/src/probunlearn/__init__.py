"""probunlearn: probabilistic evaluation of LLM unlearning and alignment."""

__version__ = "0.1.0"
