"""LangChain tools the model calls."""
